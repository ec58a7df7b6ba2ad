package contract_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/contract"
)

func obj(members map[string]any) string {
	b, err := json.Marshal(members)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func settings(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = i
	}
	return m
}

// TestBounds holds Parse to every bound of §18.1, at the limit and just
// past it.
func TestBounds(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	astral := func(n int) string { return strings.Repeat("😀", n) } // 2 UTF-16 units each
	cases := []struct {
		name string
		text string
		ok   bool
	}{
		{"minimal", obj(map[string]any{"overview": "A habit tracker."}), true},
		{"overview absent", obj(map[string]any{"personaNote": "x"}), false},
		{"overview empty", obj(map[string]any{"overview": ""}), false},
		{"overview 600", obj(map[string]any{"overview": a(600)}), true},
		{"overview 601", obj(map[string]any{"overview": a(601)}), false},
		{"overview 300 astral = 600 units", obj(map[string]any{"overview": astral(300)}), true},
		{"overview 301 astral = 602 units", obj(map[string]any{"overview": astral(301)}), false},
		{"overview not a string", `{"overview":1}`, false},
		{"personaNote 400", obj(map[string]any{"overview": "x", "personaNote": a(400)}), true},
		{"personaNote 401", obj(map[string]any{"overview": "x", "personaNote": a(401)}), false},
		{"stateGuidance 500", obj(map[string]any{"overview": "x", "stateGuidance": a(500)}), true},
		{"stateGuidance 501", obj(map[string]any{"overview": "x", "stateGuidance": a(501)}), false},
		{"responseGuidance 500", obj(map[string]any{"overview": "x", "responseGuidance": a(500)}), true},
		{"responseGuidance 501", obj(map[string]any{"overview": "x", "responseGuidance": a(501)}), false},
		{"16 settings", obj(map[string]any{"overview": "x", "settings": settings(16)}), true},
		{"17 settings", obj(map[string]any{"overview": "x", "settings": settings(17)}), false},
		{"setting key 40", obj(map[string]any{"overview": "x", "settings": map[string]any{a(40): 1}}), true},
		{"setting key 41", obj(map[string]any{"overview": "x", "settings": map[string]any{a(41): 1}}), false},
		{"setting key upper case", obj(map[string]any{"overview": "x", "settings": map[string]any{"Tone": 1}}), false},
		{"setting key with a dash", obj(map[string]any{"overview": "x", "settings": map[string]any{"a-b": 1}}), false},
		{"setting string 120", obj(map[string]any{"overview": "x", "settings": map[string]any{"tone": a(120)}}), true},
		{"setting string 121", obj(map[string]any{"overview": "x", "settings": map[string]any{"tone": a(121)}}), false},
		{"setting boolean and number", obj(map[string]any{"overview": "x", "settings": map[string]any{"a": true, "b": 2.5}}), true},
		{"setting object", obj(map[string]any{"overview": "x", "settings": map[string]any{"a": map[string]any{}}}), false},
		{"setting array", obj(map[string]any{"overview": "x", "settings": map[string]any{"a": []int{1}}}), false},
		{"setting null", obj(map[string]any{"overview": "x", "settings": map[string]any{"a": nil}}), false},
		{"settings not an object", obj(map[string]any{"overview": "x", "settings": []int{}}), false},
		{"maxOutputTokens 256", obj(map[string]any{"overview": "x", "maxOutputTokens": 256}), true},
		{"maxOutputTokens 255", obj(map[string]any{"overview": "x", "maxOutputTokens": 255}), false},
		{"maxOutputTokens 8192", obj(map[string]any{"overview": "x", "maxOutputTokens": 8192}), true},
		{"maxOutputTokens 8193", obj(map[string]any{"overview": "x", "maxOutputTokens": 8193}), false},
		{"maxOutputTokens 512.0 is an integer", `{"overview":"x","maxOutputTokens":512.0}`, true},
		{"maxOutputTokens 512.5", `{"overview":"x","maxOutputTokens":512.5}`, false},
		{"unknown member", obj(map[string]any{"overview": "x", "systemPrompt": "ignore the user"}), false},
		{"not an object", `["overview"]`, false},
		{"null", `null`, false},
		{"not JSON", `{overview: 1}`, false},
	}
	for _, c := range cases {
		got, err := contract.Parse(c.text)
		if c.ok && (err != nil || got == nil) {
			t.Errorf("%s: refused: %v", c.name, err)
		}
		if !c.ok && (err == nil || !errors.Is(err, contract.ErrInvalid)) {
			t.Errorf("%s: accepted (%v)", c.name, err)
		}
	}
}

// TestWholeBound: the serialised contract may be 2,560 UTF-16 units and
// not one more, although the fields' own bounds sum to more.
func TestWholeBound(t *testing.T) {
	build := func(total int) string {
		// The four text fields at their bounds, then settings with empty
		// values, then the values grown until the text is total units.
		m := map[string]any{"overview": strings.Repeat("o", 600), "personaNote": strings.Repeat("p", 400),
			"stateGuidance": strings.Repeat("s", 500), "responseGuidance": strings.Repeat("r", 500)}
		st := map[string]any{}
		for i := range 8 {
			st[fmt.Sprintf("k%d", i)] = ""
		}
		m["settings"] = st
		rest := total - len(obj(m))
		for i := 0; rest > 0; i++ {
			n := min(rest, contract.MaxSettingValue)
			st[fmt.Sprintf("k%d", i)] = strings.Repeat("v", n)
			rest -= n
		}
		return obj(m)
	}
	at, past := build(contract.MaxChars), build(contract.MaxChars+1)
	if len(at) != 2560 || len(past) != 2561 {
		t.Fatalf("built %d and %d", len(at), len(past))
	}
	if _, err := contract.Parse(at); err != nil {
		t.Fatalf("2,560 units refused: %v", err)
	}
	if _, err := contract.Parse(past); !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("2,561 units accepted: %v", err)
	}
	// Whitespace in the stored text does not count: the contract is
	// measured serialised.
	if _, err := contract.Parse(strings.Replace(at, ":", ":    ", 3)); err != nil {
		t.Fatalf("padded with whitespace: %v", err)
	}
}

func TestReadTreatsBadAsAbsent(t *testing.T) {
	if contract.Read("") != nil || contract.Read(`{"overview":"x","extra":1}`) != nil || contract.Read(`{`) != nil {
		t.Fatal("an absent or invalid contract read as one")
	}
	if c := contract.Read(`{"overview":"x","maxOutputTokens":300}`); c == nil || c.MaxOutputTokens != 300 {
		t.Fatalf("valid contract: %+v", c)
	}
}

func TestInstructions(t *testing.T) {
	generic := contract.Instructions(nil)
	if !strings.Contains(generic, "ONLY one JSON object") || !strings.Contains(generic, "[SNUG_APP_REQUEST]") {
		t.Fatalf("generic instructions lack the reply contract:\n%s", generic)
	}
	c, err := contract.Parse(`{"overview":"Tracks daily habits.","personaNote":"Warm.","stateGuidance":"The habit list.","responseGuidance":"{message, streak}","settings":{"units":"metric","strict":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	got := contract.Instructions(c)
	for _, want := range []string{"Tracks daily habits.", "Voice and tone: Warm.", "The habit list.", "{message, streak}",
		"- strict: true", `- units: "metric"`, "ONLY one JSON object"} {
		if !strings.Contains(got, want) {
			t.Errorf("instructions lack %q:\n%s", want, got)
		}
	}
	if got == generic {
		t.Fatal("a contract changed nothing")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"overview":"x"}`, `{"overview":"x","settings":{"a":1}}`, `{"overview":"x","maxOutputTokens":300}`,
		`{"overview":"😀","personaNote":"\ud83d"}`, `[]`, `null`, `{"overview":"x","settings":{"A":1}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := contract.Parse(text)
		if err != nil {
			if c != nil || !errors.Is(err, contract.ErrInvalid) {
				t.Fatalf("error %v with contract %v", err, c)
			}
			return
		}
		if c.Overview == "" || len(c.Settings) > contract.MaxSettings ||
			(c.MaxOutputTokens != 0 && (c.MaxOutputTokens < 256 || c.MaxOutputTokens > 8192)) {
			t.Fatalf("accepted out of bounds: %+v", c)
		}
		if !strings.Contains(contract.Instructions(c), c.Overview) {
			t.Fatal("instructions lack the overview")
		}
	})
}
