package jsonmut_test

import (
	"encoding/json"
	"testing"

	"github.com/dsh-browser/broker/internal/jsonmut"
)

const doc = `{"v":1,"type":"snug:app-message","n":1.50,"list":[1,"a",{"b":null}],"o":{"k":true}}`

var vocab = jsonmut.Vocabulary{
	Keys:    []string{"extra", "type"},
	Enums:   map[string][]any{"type": {"snug:app-cancel", "x"}},
	Strings: []string{"https://example.com", "GET"},
	Numbers: []string{"0", "1.0", "1e400"},
}

// TestDeterministic guards the promise that mutations depend on the seed
// alone.
func TestDeterministic(t *testing.T) {
	a, b := jsonmut.New(7, vocab), jsonmut.New(7, vocab)
	for range 200 {
		x := jsonmut.Encode(a.Mutate(jsonmut.MustParse(doc)))
		y := jsonmut.Encode(b.Mutate(jsonmut.MustParse(doc)))
		if x != y {
			t.Fatalf("same seed, different mutations:\n%s\n%s", x, y)
		}
	}
}

// TestRoundTrip checks that a tree keeps member order and number text.
func TestRoundTrip(t *testing.T) {
	if got := jsonmut.Encode(jsonmut.MustParse(doc)); got != doc {
		t.Fatalf("Encode(Parse(doc)) = %s", got)
	}
	if _, err := jsonmut.Parse(doc + " {}"); err == nil {
		t.Error("Parse accepted trailing data")
	}
}

// TestMutationsAreJSONAndVaried checks that every mutation is JSON and that
// they are not all alike.
func TestMutationsAreJSONAndVaried(t *testing.T) {
	m := jsonmut.New(1, vocab)
	seen := map[string]bool{}
	for range 500 {
		text := jsonmut.Encode(m.Mutate(jsonmut.MustParse(doc)))
		if !json.Valid([]byte(text)) {
			t.Fatalf("mutation is not JSON: %q", text)
		}
		seen[text] = true
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct mutations of 500", len(seen))
	}
}
