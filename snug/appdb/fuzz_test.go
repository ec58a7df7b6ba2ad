package appdb

import (
	"encoding/json"
	"testing"
)

// FuzzBindParams checks the parameter decoder: it never panics, and what
// it accepts is a SQLite value of the JSON value's kind.
func FuzzBindParams(f *testing.F) {
	for _, s := range []string{`null`, `true`, `1`, `-9223372036854775808`, `9223372036854775808`, `1.5e300`, `"s"`, `[1,2,255]`, `[256]`, `[-1]`, `[1.5]`, `{"a":1}`, `[]`, `1e999`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		out, err := bindParams([]json.RawMessage{json.RawMessage(s)})
		if err != nil {
			return
		}
		switch v := out[0].(type) {
		case nil, int64, float64, string, []byte:
		default:
			t.Fatalf("%s bound as %T", s, v)
		}
	})
}
