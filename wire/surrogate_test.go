package wire_test

import (
	"testing"

	"github.com/dsh-browser/broker/wire"
)

// TestLoneSurrogateIDsRefused: an ID escaping a lone UTF-16 surrogate
// would come back changed (decoding makes it U+FFFD), so the reply would
// not match; it is refused at the boundary. Pairs are fine.
func TestLoneSurrogateIDsRefused(t *testing.T) {
	for id, ok := range map[string]bool{
		`"\ud83d\ude00"`: true,  // a pair: 😀
		`"a\u00e9b"`:     true,  // not a surrogate
		`"\\ud800"`:      true,  // an escaped backslash, then text
		`"\ud800"`:       false, // high alone
		`"\udc00"`:       false, // low alone
		`"x\ud800y"`:     false,
		`"\ud800\ud800"`: false, // two highs
		`"\ude00\ud83d"`: false, // reversed pair
		`"\ud800\u0041"`: false,
	} {
		for _, env := range []string{
			`{"type":"request","id":` + id + `,"method":"m","params":{}}`,
			`{"type":"response","id":` + id + `,"ok":true,"value":null}`,
			`{"type":"cancel","id":` + id + `}`,
		} {
			_, err := wire.ParseEnvelope([]byte(env))
			if (err == nil) != ok {
				t.Errorf("%s: err = %v, want ok=%v", env, err, ok)
			}
		}
	}
}
