package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"reflect"
	"strings"
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

// decodeUseNumber is what jsonschema.UnmarshalJSON does: a json.Decoder
// with UseNumber, one value, nothing after it.
func decodeUseNumber(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// FuzzDecodeValue holds DecodeValue to a json.Decoder with UseNumber: the
// same texts accepted, the same values (numbers as json.Number, the last
// of a repeated key, invalid UTF-8 and lone surrogates as U+FFFD).
func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"sessionId":"s","instanceId":"inst"}`, ` [1, -0.5E-3, 1e5, true, false, null, "x"] `,
		`{"a":1,"a":2}`, `{"a":01}`, `1.`, `"\ud800"`, "\"\xff\"", `{"\u0061":[{}]}`, `[1,]`, `{} x`, `{"a"}`,
		`[[[[[[[[[[]]]]]]]]]]`, `"\q"`, ``, ` `, `nul`, `-`, `"\u00e9\"\\\/\b\f\n\r\t"`, `{"a":1}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := decodeUseNumber(data)
		got, err := DecodeValue(data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: DecodeValue err %v, json.Decoder err %v", data, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: DecodeValue = %#v, want %#v", data, got, want)
		}
	})
}

// TestDecodeValueDepth: arrays and objects nested as deep as encoding/json
// allows decode, one level more does not, as with encoding/json.
func TestDecodeValueDepth(t *testing.T) {
	nest := func(n int, open, close, inner string) []byte {
		return []byte(strings.Repeat(open, n) + inner + strings.Repeat(close, n))
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"arrays at the limit", nest(maxDepth, "[", "]", "1")},
		{"arrays past the limit", nest(maxDepth+1, "[", "]", "1")},
		{"objects at the limit", nest(maxDepth, `{"a":`, "}", "1")},
		{"objects past the limit", nest(maxDepth+1, `{"a":`, "}", "1")},
	} {
		_, wantErr := decodeUseNumber(tc.data)
		_, err := DecodeValue(tc.data)
		if (err == nil) != (wantErr == nil) {
			t.Errorf("%s: DecodeValue err %v, json.Decoder err %v", tc.name, err, wantErr)
		}
		if strings.Contains(tc.name, "past") == (err == nil) {
			t.Errorf("%s: DecodeValue err %v", tc.name, err)
		}
	}
}
