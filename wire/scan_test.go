package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"reflect"
	"slices"
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

// FuzzMembersElementsString holds Members, Elements and String to
// encoding/json: the same texts accepted, the same members (the last of a
// repeated key winning once stored), elements and strings.
func FuzzMembersElementsString(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":1,"a":2}`, ` {"\u0061":[1,{"b":null}], "c":"\u00e9\"x"} `, "{\"\xff\":1}", `{"a"}`, `{"a":1,}`,
		`[1, "x", {"y":[]}, null]`, `[1,]`, `[] x`, `"plain"`, `"\ud800"`, "\"\xff\"", `null`, `"a\"b"`, `{"id":"inst:1","url":"https://a.test/"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		trimmed := bytes.Trim(data, " \t\r\n")
		var wantObj map[string]json.RawMessage
		objErr := json.Unmarshal(data, &wantObj)
		gotObj := map[string]json.RawMessage{}
		err := Members(data, func(k, v []byte) error { gotObj[string(k)] = v; return nil })
		if okWant := objErr == nil && len(trimmed) > 0 && trimmed[0] == '{'; (err == nil) != okWant {
			t.Fatalf("%q: Members err %v, encoding/json err %v", data, err, objErr)
		}
		if err == nil && !maps.EqualFunc(gotObj, wantObj, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Fatalf("%q: members %q, want %q", data, gotObj, wantObj)
		}

		var wantArr []json.RawMessage
		arrErr := json.Unmarshal(data, &wantArr)
		var gotArr []json.RawMessage
		err = Elements(data, func(v []byte) error { gotArr = append(gotArr, v); return nil })
		if okWant := arrErr == nil && len(trimmed) > 0 && trimmed[0] == '['; (err == nil) != okWant {
			t.Fatalf("%q: Elements err %v, encoding/json err %v", data, err, arrErr)
		}
		if err == nil && (len(gotArr) != len(wantArr) || !slicesEqual(gotArr, wantArr)) {
			t.Fatalf("%q: elements %q, want %q", data, gotArr, wantArr)
		}

		var wantStr string
		strErr := json.Unmarshal(data, &wantStr)
		gotStr, err := String(trimmed)
		if okWant := strErr == nil && len(trimmed) > 0 && trimmed[0] == '"'; (err == nil) != okWant {
			t.Fatalf("%q: String err %v, encoding/json err %v", data, err, strErr)
		}
		if err == nil && gotStr != wantStr {
			t.Fatalf("%q: String %q, want %q", data, gotStr, wantStr)
		}
		if want, _ := json.Marshal(wantStr); err == nil && string(AppendString(nil, gotStr)) != string(want) {
			t.Fatalf("%q: AppendString %s, want %s", gotStr, AppendString(nil, gotStr), want)
		}
	})
}

func slicesEqual(a, b []json.RawMessage) bool {
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}

// TestMembersAndElementsStopAtAnError: an error f returns ends the pass
// and is returned; text past the value is refused before f sees anything.
func TestMembersAndElementsStopAtAnError(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	if err := Elements([]byte(`[1,2,3]`), func([]byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Elements: %v after %d calls", err, calls)
	}
	calls = 0
	if err := Members([]byte(`{"a":1,"b":2}`), func(_, _ []byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Members: %v after %d calls", err, calls)
	}
	calls = 0
	for _, bad := range []string{`[1,2] 3`, `[1,2`, `{"a":1} {}`, `{"a":1`} {
		f := func([]byte) error { calls++; return nil }
		if Elements([]byte(bad), f) == nil && Members([]byte(bad), func(k, v []byte) error { return f(v) }) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if calls != 0 {
		t.Fatalf("f called %d times for text that is not one value", calls)
	}
}

// FuzzObjectElements holds ObjectElements to Elements and Members of each
// element: the same texts accepted, the same members and elements in the
// same order.
func FuzzObjectElements(f *testing.F) {
	for _, s := range []string{
		`[]`, `[{}]`, ` [ {"a":1,"a":2} , {"\u0062":[1,{"c":null}]} ] `, `[{"a":1},1]`, `[1]`, `[{},]`, `{}`, `[{}] x`,
		"[{\"\xff\":1}]", `[{"id":"inst:1","instanceId":"inst","url":"https://a.test/","title":"A"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want, got []string
		wantErr := Elements(data, func(elem []byte) error {
			err := Members(elem, func(k, v []byte) error { want = append(want, string(k)+"="+string(v)); return nil })
			want = append(want, "end "+string(elem))
			return err
		})
		err := ObjectElements(data,
			func(k, v []byte) error { got = append(got, string(k)+"="+string(v)); return nil },
			func(elem []byte) error { got = append(got, "end "+string(elem)); return nil })
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: ObjectElements err %v, Elements and Members err %v", data, err, wantErr)
		}
		if err == nil && !slices.Equal(got, want) {
			t.Fatalf("%q: ObjectElements %q, Elements and Members %q", data, got, want)
		}
	})
}
