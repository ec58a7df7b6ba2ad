package fetch_test

import (
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/userdb"
)

// snug-connection://slot/path resolves to the slot's one ceiling host; the
// confirm carries the resolved host and URL and the slot; refusals name no
// host.
func TestConnectionURL(t *testing.T) {
	w := newWorld(t)
	s := w.provider(nil, "graph.microsoft.com")
	w.connect(apiKey("files", "graph.microsoft.com"), userdb.Credentials{"api_key": key})
	resp, ferr := w.do("GET", "snug-connection://files/v1.0/me/drive?top=5", nil, nil)
	if ferr != nil || resp.Status != 200 {
		t.Fatalf("%+v %+v", resp, ferr)
	}
	if got := s.requests()[0]; got.Path != "/v1.0/me/drive" || got.Query != "top=5" || got.Header.Get("X-Api-Key") != key {
		t.Fatalf("the provider saw %+v", got)
	}
	if _, ferr := w.do("PUT", "snug-connection://files/v1.0/me/drive/x", nil, str("data")); ferr != nil {
		t.Fatal(ferr)
	}
	if c := w.asked[0]; c.Host != "graph.microsoft.com" || c.URL != "https://graph.microsoft.com/v1.0/me/drive/x" || c.Slot != "files" || c.Method != "PUT" {
		t.Fatalf("confirm %+v", c)
	}
	// Path tricks resolve on the ceiling host or are refused.
	for _, u := range []string{"snug-connection://files/..%2f..%2fevil.example/", "snug-connection://files/a/../../b"} {
		if _, ferr := w.do("GET", u, nil, nil); ferr != nil {
			t.Errorf("%s: %+v", u, ferr)
		}
	}
	for _, r := range s.requests() {
		if strings.Contains(r.Path, "evil.example") && !strings.HasPrefix(r.Path, "/") {
			t.Fatalf("left the host: %+v", r)
		}
	}

	w2 := newWorld(t)
	w2.provider(nil, "a.example", "b.example", "shared.example")
	w2.connect(apiKey("two", "a.example", "b.example"), userdb.Credentials{"api_key": key})
	w2.connect(apiKey("one", "shared.example"), userdb.Credentials{"api_key": key})
	w2.connect(apiKey("also", "shared.example"), userdb.Credentials{"api_key": key})
	w2.declare(apiKey("later", "later.example"))
	w2.connect(apiKey("lan", "10.0.0.7"), userdb.Credentials{"api_key": key})
	w2.plant("imp", apiKey("imp", "imp.example"), []string{"imp.example"}, true)
	w2.db.reads.Store(0)
	for _, c := range []struct{ url, code string }{
		{"snug-connection://two/x", frame.CodeNetAmbiguousConnection},
		{"snug-connection://one/x", frame.CodeNetAmbiguousConnection},
		{"snug-connection://nope/x", frame.CodeNetInvalidRequest},
		{"snug-connection://later/x", frame.CodeNetNotApproved},
		{"snug-connection://imp/x", frame.CodeNetImportedUnapproved},
		{"snug-connection://lan/x", frame.CodeNetSSRFBlocked},
		{"snug-connection://lan", frame.CodeNetInvalidRequest},
	} {
		resp, ferr := w2.do("GET", c.url, nil, nil)
		w2.refused(c.url, c.code, resp, ferr)
		if ferr != nil {
			for _, h := range []string{"a.example", "b.example", "shared.example", "10.0.0.7", "later.example"} {
				if strings.Contains(ferr.Message, h) {
					t.Errorf("%s: the refusal names %s: %q", c.url, h, ferr.Message)
				}
			}
		}
	}
}

// A transport failure on the snug-connection:// path does not name the
// resolved host.
func TestConnectionURLErrorIsHostClean(t *testing.T) {
	w := newWorld(t)
	w.net.Answer("down.example", "93.184.216.252")
	w.connect(apiKey("down", "down.example"), userdb.Credentials{"api_key": key})
	resp, ferr := w.do("GET", "snug-connection://down/x", nil, nil)
	if ferr == nil || ferr.Code != frame.CodeNetFetchFailed || strings.Contains(ferr.Message, "down.example") || strings.Contains(ferr.Message, "93.184.216.252") {
		t.Fatalf("%+v %+v", resp, ferr)
	}
}
