package wire

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
)

// FuzzSplitObject holds splitObject to encoding/json: the same texts
// accepted, the same members (last duplicate wins), the same raw values.
func FuzzSplitObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, ` {"a" : [1, {"b":null}], "c":"\u00e9\"x"} `, `{"a":1,"a":2}`,
		`{"a":1e5,"b":-0.5E-3,"c":true,"d":false}`, `{"a":01}`, `{"a":1.}`, `{"a":"\x01"}`,
		`{"a":"\ud800"}`, `{"\u0061":1}`, `{"a":[1,]}`, `{"a":{}}x`, `{"a"}`, "{\"a\":\"\xff\"}",
		`{"a":[[[[[[[[[[]]]]]]]]]]}`, `{"a":"\q"}`, `[]`, `{"a":1,}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !isObject(bytes.Trim(data, " \t\r\n")) {
			return // decodeObject refuses it first (encoding/json would take null)
		}
		var want map[string]json.RawMessage
		wantErr := json.Unmarshal(data, &want)
		got, err := splitObject(data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: splitObject err %v, encoding/json err %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		if !maps.EqualFunc(map[string]json.RawMessage(got), want, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Fatalf("%q: members %q, want %q", data, got, want)
		}
	})
}
