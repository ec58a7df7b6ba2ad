package browser_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dsh-browser/broker/browser"
)

func compile(t *testing.T, params any) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(browser.ParamsSchema(params)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("p.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("p.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func valid(t *testing.T, s *jsonschema.Schema, js string) bool {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return s.Validate(v) == nil
}

// TestParamsSchemaBounds: the tags' bounds reach the schema, at and just
// past each limit.
func TestParamsSchemaBounds(t *testing.T) {
	act := compile(t, browser.ActParams{})
	req := func(action string, extra string) string {
		return `{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":` + action + extra + `}}`
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		js   string
		want bool
	}{
		{req(`{"kind":"click","ref":"r1"}`, ``), true},
		{req(`{"kind":"hover","ref":"r1"}`, ``), true},
		{req(`{"kind":"doubleclick","ref":"r1"}`, ``), false},
		{req(`{"kind":"chord","ref":"r","key":"a","modifiers":[]}`, ``), true},
		{req(`{"kind":"chord","ref":"r","key":"Enter","modifiers":[]}`, ``), false},
		{req(`{"kind":"chord","ref":"r","key":"Enter","modifiers":["Control","Alt","Meta","Shift"]}`, ``), true},
		{req(`{"kind":"chord","ref":"r","key":"a","modifiers":["Control","Control"]}`, ``), false},
		{req(`{"kind":"chord","ref":"r","key":"ab","modifiers":["Control"]}`, ``), false},
		{req(`{"kind":"chord","ref":"r","key":" ","modifiers":["Control"]}`, ``), false},
		{req(`{"kind":"chord","ref":"r","key":"\u0007","modifiers":["Control"]}`, ``), false},
		{req(`{"kind":"drag","ref":"r","toRef":"r2"}`, ``), true},
		{req(`{"kind":"drag","ref":"r","toRef":"r2","deltaX":1,"deltaY":0}`, ``), false},
		{req(`{"kind":"drag","ref":"r","deltaX":0,"deltaY":0}`, ``), false},
		{req(`{"kind":"drag","ref":"r","deltaX":-10000,"deltaY":10000}`, ``), true},
		{req(`{"kind":"drag","ref":"r","deltaX":-10001,"deltaY":1}`, ``), false},
		{req(`{"kind":"clickAt","ref":"r","x":0,"y":10000}`, ``), true},
		{req(`{"kind":"clickAt","ref":"r","x":-1,"y":0}`, ``), false},
		{req(`{"kind":"clickAt","ref":"r","x":0,"y":10001}`, ``), false},
		{req(`{"kind":"select","ref":"r","value":""}`, ``), true},
		{req(`{"kind":"select","ref":"r","value":"`+long(1000)+`"}`, ``), true},
		{req(`{"kind":"select","ref":"r","value":"`+long(1001)+`"}`, ``), false},
		{req(`{"kind":"click","ref":"`+long(128)+`"}`, ``), true},
		{req(`{"kind":"click","ref":"`+long(129)+`"}`, ``), false},
		{req(`{"kind":"fill","ref":"r","text":"`+long(10000)+`"}`, ``), true},
		{req(`{"kind":"fill","ref":"r","text":"`+long(10001)+`"}`, ``), false},
		{req(`{"kind":"press","ref":"r","key":"Enter"}`, ``), true},
		{req(`{"kind":"press","ref":"r","key":"F13"}`, ``), false},
		{req(`{"kind":"click","ref":"r"}`, `,"timeoutMs":30000`), true},
		{req(`{"kind":"click","ref":"r"}`, `,"timeoutMs":30001`), false},
		{req(`{"kind":"click","ref":"r"}`, `,"timeoutMs":0`), false},
		{req(`{"kind":"click","ref":"r"}`, `,"timeoutMs":null`), false},
		{req(`{"kind":"click","ref":"r","expected":{"kind":"text","text":"`+long(2000)+`"}}`, ``), true},
		{req(`{"kind":"click","ref":"r","expected":{"kind":"text","text":"`+long(2001)+`"}}`, ``), false},
		{req(`{"kind":"click","ref":"r"}`, `,"extra":1`), false},
		{`{"sessionId":"` + long(256) + `","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"click","ref":"r"}}}`, true},
		{`{"sessionId":"` + long(257) + `","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"click","ref":"r"}}}`, false},
	} {
		if got := valid(t, act, tc.js); got != tc.want {
			t.Errorf("valid = %v, want %v: %.200s", got, tc.want, tc.js)
		}
	}
	batch := compile(t, browser.BatchParams{})
	steps := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = `{"action":{"kind":"click","ref":"r"}}`
		}
		return `{"sessionId":"s","approvalId":"a","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","steps":[` + strings.Join(s, ",") + `]}}`
	}
	for n, want := range map[int]bool{0: false, 1: true, 8: true, 9: false} {
		if got := valid(t, batch, steps(n)); got != want {
			t.Errorf("%d steps: valid = %v, want %v", n, got, want)
		}
	}
	inst := compile(t, browser.InstancesParams{})
	for js, want := range map[string]bool{`{}`: true, `{"sessionId":"s"}`: true, `{"other":1}`: false} {
		if got := valid(t, inst, js); got != want {
			t.Errorf("browser.instances %s: valid = %v, want %v", js, got, want)
		}
	}
}

// TestKeyEnumIsNamedKeys: the press key enum of the schema is NamedKeys.
func TestKeyEnumIsNamedKeys(t *testing.T) {
	type node struct {
		Properties map[string]*node `json:"properties"`
		OneOf      []*node          `json:"oneOf"`
		Const      string           `json:"const"`
		Enum       []string         `json:"enum"`
	}
	var s node
	json.Unmarshal(browser.ParamsSchema(browser.ActParams{}), &s)
	var got []string
	for _, shape := range s.Properties["request"].Properties["action"].OneOf {
		if shape.Properties["kind"].Const == browser.ActPress {
			got = shape.Properties["key"].Enum
		}
	}
	var want []string
	for k := range browser.NamedKeys {
		want = append(want, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("key enum %v, NamedKeys %v", got, want)
	}
}

// TestNonblankPattern: the schema's nonblank pattern and Blank agree on
// every character: only the white space of unicode.IsSpace is blank.
func TestNonblankPattern(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Properties map[string]struct {
				Pattern string `json:"pattern"`
			} `json:"properties"`
		} `json:"properties"`
	}
	json.Unmarshal(browser.ParamsSchema(browser.ObserveParams{}), &s)
	re := regexp.MustCompile(s.Properties["query"].Properties["name"].Pattern)
	// Every white space character is below U+3100; above, a sample.
	for r := rune(0); r <= 0x10FFFF; r++ {
		if (r >= 0xD800 && r <= 0xDFFF) || (r > 0x3100 && r%251 != 0) {
			continue
		}
		c := string(r)
		if re.MatchString(c) == browser.Blank(c) || browser.Blank(c) != unicode.IsSpace(r) {
			t.Fatalf("U+%04X: pattern matches %v, Blank %v, IsSpace %v", r, re.MatchString(c), browser.Blank(c), unicode.IsSpace(r))
		}
	}
}

// TestCharacterPattern: a chord's one-character key in the schema and
// KeyCharacter agree on every character: neither a control character nor
// white space.
func TestCharacterPattern(t *testing.T) {
	act := compile(t, browser.ActParams{})
	chord := func(key string) string {
		k, _ := json.Marshal(key)
		return `{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"chord","ref":"r","key":` + string(k) + `,"modifiers":["Control"]}}}`
	}
	// Every control and white space character is below U+3100; above, a sample.
	for r := rune(0); r <= 0x10FFFF; r++ {
		if (r >= 0xD800 && r <= 0xDFFF) || (r > 0x3100 && r%251 != 0) {
			continue
		}
		c := string(r)
		want := !unicode.IsControl(r) && !unicode.IsSpace(r)
		if valid(t, act, chord(c)) != want || browser.KeyCharacter(c) != want {
			t.Fatalf("U+%04X: schema %v, KeyCharacter %v, want %v", r, valid(t, act, chord(c)), browser.KeyCharacter(c), want)
		}
	}
}

// TestEveryMethodHasParams: each client method's params type is listed.
func TestEveryMethodHasParams(t *testing.T) {
	for _, m := range []string{browser.MethodInstances, browser.MethodTabs, browser.MethodClaim, browser.MethodObserve,
		browser.MethodReadPage, browser.MethodFrames, browser.MethodCapture, browser.MethodValidateLease,
		browser.MethodAct, browser.MethodBatch, browser.MethodRelease, browser.MethodReleaseSession} {
		if _, ok := browser.ParamsTypes[m]; !ok {
			t.Errorf("%s has no params type", m)
		}
	}
}
