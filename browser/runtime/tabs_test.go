package runtime

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
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

// FuzzKeepTabs holds keepTabs, browser.tabs's filter, to what it replaced
// on that path: listTabs's filter over decodeTabs's list, encoded by
// tabList. The same lists refused, and the same bytes for the rest, in
// personal mode and with an allowlist.
func FuzzKeepTabs(f *testing.F) {
	for _, s := range []string{
		`[]`, `null`, ` null `, `[{"id":"i:1","instanceId":"i","url":"https://a.test/x?q=1","title":"A"}]`,
		`[{"id":"i:1","instanceId":"i","url":"https://a.test/x?q=1","title":"A <b> & \u00e9"}]`,
		`[{"id":"i:1","instanceId":"i","url":"https://b.test/","title":"é"},{"id":"i:2","instanceId":"j","url":"https://a.test/","title":""}]`,
		`[{"instanceId":"i","id":"i:1","url":"http://a.test","title":"A"}]`,
		`[{"id":"i:1","instanceId":"i","url":"https://a.test/","title":"A","x":1}]`,
		`[{"id":"i:1","instanceId":"\u0069","url":"https://a.test/","title":null}]`,
		`[{"id":"","instanceId":"i","url":"https://a.test/"}]`,
		`[{"id":"i:1","instanceId":"i","url":"chrome://newtab/","title":"A"}]`,
		`[{"id":"i:1","instanceId":"i","url":"https://u:p@a.test/","title":"A"}]`,
		`[{"id":"i:1","id":"i:2","extra":[1,{}],"title":null}]`, `[{"id":1}]`, `[1]`, `{}`, `[{},]`,
		` [ { "id" : "a", "instanceId" : "i", "url" : "https://a.test" } ] `,
		`[{"url":"\ud800","instanceId":"i","id":"x"}, {"title":"` + "\xff" + `","instanceId":"i","id":"y","url":"https://a.test"}]`,
	} {
		f.Add([]byte(s), "i")
	}
	f.Fuzz(func(t *testing.T, data []byte, instanceID string) {
		for _, cfg := range []Config{{Personal: true}, {AllowOrigins: []string{"https://a.test"}}} {
			r := &Runtime{cfg: cfg}
			tabs, wantErr := decodeTabs(data)
			got, err := r.keepTabs(data, instanceID)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("%q: keepTabs err %v, decodeTabs err %v", data, err, wantErr)
			}
			if err != nil {
				continue
			}
			var kept tabList
			if tabs != nil {
				kept = tabs[:0]
			}
			for _, tab := range tabs {
				if tab.InstanceID == instanceID && bounded(tab.ID, 1, 256) && r.allowedURL(tab.URL) {
					kept = append(kept, tab)
				}
			}
			if enc, want := got.AppendJSON([]byte("p")), kept.AppendJSON([]byte("p")); string(enc) != string(want) {
				t.Fatalf("%q (%+v): keepTabs gives %s, want %s", data, cfg, enc, want)
			}
		}
	})
}

// tabList was browser.tabs's value before keepTabs: json.Marshal's
// encoding of []browser.TabSummary, written without reflection. The fuzz
// targets hold decodeTabs and keepTabs to it.
type tabList []browser.TabSummary

func (l tabList) AppendJSON(b []byte) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = slices.Grow(b, 160*len(l)+2)
	b = append(b, '[')
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTab(b, &l[i])
	}
	return append(b, ']')
}
