package jsonread_test

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/internal/jsonread"
)

// bigInteger is how the schema validator judges a JSON number: math/big's
// exact value, when math/big accepts the text at all.
func bigInteger(s string) (n int64, isInt bool) {
	r, ok := new(big.Rat).SetString(s)
	if !ok || !r.IsInt() {
		return 0, false
	}
	limit := big.NewInt(1e18)
	switch i := r.Num(); {
	case i.Cmp(limit) > 0:
		return 1e18, true
	case i.Cmp(new(big.Int).Neg(limit)) < 0:
		return -1e18, true
	default:
		return i.Int64(), true
	}
}

func TestInteger(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "1.0", "1e0", "10e-1", "1.5", "0.5e1", "1e18", "1e19", "-1e19",
		"9007199254740991", "9007199254740991.0000001", "1.0000000000000001", "100000000000000000000e-20",
		"1e1000000", "1e1000001", "1e-1000001", "0e1000001", "0.0e-999999", "12345678901234567890", "1E+2", "1e-0"} {
		got, gotInt := jsonread.Integer(json.RawMessage(s))
		want, wantInt := bigInteger(s)
		if got != want || gotInt != wantInt {
			t.Errorf("Integer(%s) = %d, %v; math/big says %d, %v", s, got, gotInt, want, wantInt)
		}
	}
	for _, raw := range []string{`"1"`, "true", "null", "[1]", ""} {
		if _, ok := jsonread.Integer(json.RawMessage(raw)); ok {
			t.Errorf("Integer(%s) is an integer", raw)
		}
	}
}

// FuzzInteger holds Integer to math/big on any JSON number.
func FuzzInteger(f *testing.F) {
	for _, s := range []string{"1", "1.0", "-0", "1e5", "1.5e1", "123e-2", "9e17", "1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n json.Number
		if json.Unmarshal([]byte(s), &n) != nil || strings.ContainsAny(s, " \t\r\n\"") {
			return
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			if e, err := strconv.Atoi(s[i+1:]); err == nil && (e > 5000 || e < -5000) {
				jsonread.Integer(json.RawMessage(s)) // too slow for math/big to check; must not panic
				return
			}
		}
		got, gotInt := jsonread.Integer(json.RawMessage(s))
		want, wantInt := bigInteger(s)
		if got != want || gotInt != wantInt {
			t.Errorf("Integer(%s) = %d, %v; math/big says %d, %v", s, got, gotInt, want, wantInt)
		}
	})
}
