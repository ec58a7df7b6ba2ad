package runtime

import (
	"encoding/json"
	"reflect"
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
