package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// FuzzDecodeTabs holds decodeTabs to json.Unmarshal into
// []browser.TabSummary, and tabList's encoding to json.Marshal's byte for
// byte: the same lists accepted with the same tabs, except that decodeTabs
// matches keys exactly where encoding/json also takes them in another case.
func FuzzDecodeTabs(f *testing.F) {
	for _, s := range []string{
		`[]`, `null`, `[{"id":"i:1","instanceId":"i","url":"https://a.test/x?q=1","title":"A <b> & \u00e9"}]`,
		`[{"id":"i:1","id":"i:2","extra":[1,{}],"title":null}]`, `[{"id":1}]`, `[1]`, `{}`, `[{"ID":"x"}]`,
		`[{"url":"\ud800"}, {"title":"` + "\xff" + `"}]`, `[{},]`, ` [ { "id" : "a" } ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want []browser.TabSummary
		wantErr := json.Unmarshal(data, &want)
		got, err := decodeTabs(data)
		if wantErr == nil && err != nil && !otherCase(data) {
			t.Fatalf("%q: decodeTabs err %v, json.Unmarshal took it", data, err)
		}
		if err != nil {
			return
		}
		if wantErr != nil && !otherCase(data) {
			t.Fatalf("%q: decodeTabs took it, json.Unmarshal: %v", data, wantErr)
		}
		if !otherCase(data) && !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%q: decodeTabs %+v, want %+v", data, got, want)
		}
		// AppendJSON's bytes go on the wire as they are (rpc.JSONAppender):
		// they must be json.Marshal's, not merely equivalent to them.
		enc := tabList(got).AppendJSON([]byte("prefix"))
		wantEnc, _ := json.Marshal(got)
		if string(enc) != "prefix"+string(wantEnc) {
			t.Fatalf("tabList %+v appends %s, want %s", got, enc, wantEnc)
		}
	})
}

// otherCase reports whether data has a key that encoding/json would match
// to a field in another case (decodeTabs matches keys exactly).
func otherCase(data []byte) bool {
	var tabs []map[string]json.RawMessage
	if json.Unmarshal(data, &tabs) != nil {
		return false
	}
	for _, tab := range tabs {
		for k := range tab {
			for _, name := range []string{"id", "instanceId", "url", "title"} {
				if k != name && strings.EqualFold(k, name) {
					return true
				}
			}
		}
	}
	return false
}

// TestDecodeTabsRefusesNonStrings: a member of the four that is not a
// string (or null) breaks the provider contract, as with json.Unmarshal.
func TestDecodeTabsRefusesNonStrings(t *testing.T) {
	for _, bad := range []string{`[{"id":1}]`, `[{"url":{}}]`, `[{"title":true}]`, `[1]`, `{"id":"x"}`, `[{"id":"x"}] x`} {
		if tabs, err := decodeTabs([]byte(bad)); err == nil {
			t.Errorf("%s: decoded %+v", bad, tabs)
		}
	}
	tabs, err := decodeTabs([]byte(`[{"id":"a","instanceId":"i","url":"https://a.test/","title":null,"active":true}]`))
	if err != nil || len(tabs) != 1 || tabs[0] != (browser.TabSummary{ID: "a", InstanceID: "i", URL: "https://a.test/"}) {
		t.Fatalf("decodeTabs = %+v, %v", tabs, err)
	}
}

// FuzzTabsParams holds decodeTabsParams to decodeParams: the same params
// refused, the same accepted, with the same values.
func FuzzTabsParams(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","instanceId":"inst"}`, ` { "instanceId" : "i" , "sessionId":"s" } `, `{}`,
		`{"sessionId":"a","sessionId":"b"}`, `{"SessionID":"s"}`, `{"sessionId":null}`, `{"sessionId":1}`,
		`{"sessionId":"s","extra":true}`, `{"sessionId":"\u00e9\ud800` + "\xff" + `"}`, `{"sessionId":"s"}}`,
		`{"sessionId":"s"} {}`, `[]`, `null`, ``, `{"sessionId":"s",}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want browser.TabsParams
		wantErr := decodeParams(data, &want)
		got, err := decodeTabsParams(data)
		if (err == nil) != (wantErr == nil) || err == nil && got != want {
			t.Fatalf("%q: decodeTabsParams %+v, %v; decodeParams %+v, %v", data, got, err, want, wantErr)
		}
	})
}

// FuzzPlainHTTPOrigin holds plainHTTPOrigin to httpURL: whatever it knows,
// url.Parse takes as a credential-free HTTP(S) URL of that origin.
func FuzzPlainHTTPOrigin(f *testing.F) {
	for _, s := range []string{
		"https://site1.example/path/to/page?q=1", "http://a", "http://a.b-c.d?x#y", "https://", "https:///x",
		"https://a:80/", "https://u@a/", "https://a/%zz", "https://a/%41", "https://a/\x7f", "https://a/ b",
		"HTTPS://a/", "https://a\\b/", "https://[::1]/", "https://a/#%", "https://a?%", "https://é/", "http://a/\u00e9",
		"https://-.-/", "https://a..b/", "https://1.2.3.4.5/", "ftp://a/", "https://a@b/", "https://a/@b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		origin, ok := plainHTTPOrigin(raw)
		if !ok {
			return
		}
		u, parsed := httpURL(raw)
		if !parsed || u.Scheme+"://"+u.Host != origin {
			t.Fatalf("%q: plainHTTPOrigin %q; httpURL %v, %v", raw, origin, u, parsed)
		}
	})
}

// TestPlainHTTPOrigin: the plain shapes are known, with their origin; the
// others are left to url.Parse.
func TestPlainHTTPOrigin(t *testing.T) {
	for raw, want := range map[string]string{
		"https://site1.example/path/to/page?q=1": "https://site1.example",
		"http://a.test":                          "http://a.test",
		"http://A.Test?x#y":                      "http://A.Test",
		"https://a.test#frag":                    "https://a.test",
	} {
		if got, ok := plainHTTPOrigin(raw); !ok || got != want {
			t.Errorf("plainHTTPOrigin(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{"https://a:8080/", "https://u:p@a/", "https://a/%7e", "HTTPS://a/", "https:///x",
		"https://", "ftp://a/", "https://a/\n", "https://[::1]/", "https://a_b/"} {
		if got, ok := plainHTTPOrigin(raw); ok {
			t.Errorf("plainHTTPOrigin(%q) = %q, want it left to url.Parse", raw, got)
		}
	}
}

// BenchmarkDecodeTabs decodes the benchmark provider's list of five tabs
// (test/bench), and lists it as browser.tabs does.
func BenchmarkDecodeTabs(b *testing.B) {
	tabs := make([]browser.TabSummary, 5)
	for i := range tabs {
		n := strconv.Itoa(i + 1)
		tabs[i] = browser.TabSummary{ID: "inst:" + n, InstanceID: "inst", URL: "https://site" + n + ".example/path/to/page?q=" + n, Title: "Example page " + n}
	}
	raw, err := json.Marshal(tabs)
	if err != nil {
		b.Fatal(err)
	}
	r := &Runtime{cfg: Config{Personal: true}}
	b.ReportAllocs()
	for b.Loop() {
		got, err := decodeTabs(raw)
		if err != nil || len(got) != 5 || !r.allowedURL(got[4].URL) {
			b.Fatal(got, err)
		}
	}
}

// asyncProvider is the fake provider as a service.AsyncProvider: its Go
// hands CallWithin's outcome to done from another goroutine, as an
// rpc.Conn hands done the answer it reads.
type asyncProvider struct{ *fakeProvider }

func (p asyncProvider) Go(ctx context.Context, d time.Duration, method string, params any, done func(json.RawMessage, error)) error {
	go func() { done(p.CallWithin(ctx, d, method, params)) }()
	return nil
}

// started is StartTabs as a method that waits for its answer; answering
// twice fails the test.
func started(t *testing.T, r *Runtime) method {
	return func(ctx context.Context, c Client, params json.RawMessage) (any, error) {
		type outcome struct {
			v   any
			err error
		}
		out := make(chan outcome, 2)
		r.StartTabs(ctx, c, params, func(v any, err error) { out <- outcome{v, err} })
		o := <-out
		select {
		case <-out:
			t.Error("StartTabs answered twice")
		case <-time.After(10 * time.Millisecond):
		}
		return o.v, o.err
	}
}

// TestStartTabsAnswersAsTabs: started, browser.tabs answers what Tabs
// returns, whether the provider can answer on its reader (an
// AsyncProvider) or only to a blocked call: the same list, filtered the
// same way, and the same errors.
func TestStartTabsAnswersAsTabs(t *testing.T) {
	listed := []browser.TabSummary{
		{ID: "inst:1", InstanceID: "inst", URL: "https://app.test/form", Title: "Form"},
		{ID: "inst:2", InstanceID: "inst", URL: "chrome://settings", Title: "Settings"},
		{ID: "other:3", InstanceID: "other", URL: "https://app.test/", Title: "Another instance's"},
		{ID: "inst:4", InstanceID: "inst", URL: "https://other.test/", Title: "Other origin"},
	}
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			f := newFixture(t, Config{})
			if async {
				f.h.remove(f.p)
				f.h.add(asyncProvider{f.p})
			}
			allow := New(Config{AllowOrigins: []string{"https://app.test"}}, f.h)
			params := map[string]any{"sessionId": "s", "instanceId": "inst"}
			for _, tc := range []struct {
				name   string
				script func()
				r      *Runtime
				params any
			}{
				{"a list", func() { f.p.on(browser.ProviderTabsList, func(any) (any, error) { return listed, nil }) }, f.r, params},
				{"an allowlist", nil, allow, params},
				{"no tabs", func() { f.p.answerRaw(browser.ProviderTabsList, `[]`) }, f.r, params},
				{"null", func() { f.p.answerRaw(browser.ProviderTabsList, `null`) }, f.r, params},
				{"a provider error", func() { f.p.fail(browser.ProviderTabsList, wire.CodeDeadlineExceeded) }, f.r, params},
				{"a malformed list", func() { f.p.answerRaw(browser.ProviderTabsList, `{"tabs":[]}`) }, f.r, params},
				{"an unknown instance", nil, f.r, map[string]any{"sessionId": "s", "instanceId": "gone"}},
				{"an empty session", nil, f.r, map[string]any{"sessionId": "", "instanceId": "inst"}},
				{"not params", nil, f.r, []int{1}},
			} {
				if tc.script != nil {
					tc.script()
				}
				want, wantErr := invoke[json.RawMessage](t, tc.r.Tabs, f.c, tc.params)
				got, err := invoke[json.RawMessage](t, started(t, tc.r), f.c, tc.params)
				if string(got) != string(want) || !sameError(err, wantErr) {
					t.Errorf("%s: started %s, %v; Tabs %s, %v", tc.name, got, err, want, wantErr)
				}
			}
		})
	}
}

// sameError reports whether two errors are the same to the client: the
// same code, or both a broken provider contract.
func sameError(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return a == nil || rpc.CodeOf(a) == rpc.CodeOf(b) && errors.Is(a, errProvider) == errors.Is(b, errProvider)
}
