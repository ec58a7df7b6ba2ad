package browser_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
)

// TestParseActValues: ParseAct fills every field of each action kind.
func TestParseActValues(t *testing.T) {
	p, err := browser.ParseAct([]byte(`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","timeoutMs":1e3,
		"action":{"kind":"scroll","ref":"r1","deltaX":-0,"deltaY":1.0E2,"expected":{"kind":"state","ref":"r2","state":"hidden"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Request.Action
	if *p.Request.TimeoutMs != 1000 || a.Kind != "scroll" || a.Ref != "r1" || *a.DeltaX != 0 || *a.DeltaY != 100 ||
		*a.Expected != (browser.Expected{Kind: "state", Ref: "r2", State: "hidden"}) {
		t.Fatalf("parsed %+v %+v", p.Request, a)
	}
	p, err = browser.ParseAct([]byte(`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e",
		"action":{"kind":"check","ref":"r1","checked":false}}}`))
	if err != nil || p.Request.Action.Checked == nil || *p.Request.Action.Checked {
		t.Fatalf("check: %+v %v", p, err)
	}
}

// TestParseSince: since, the cursor an action's change is measured from,
// is 1 to 128 characters.
func TestParseSince(t *testing.T) {
	for n, ok := range map[int]bool{0: false, 1: true, 128: true, 129: false} {
		since, _ := json.Marshal(strings.Repeat("c", n))
		p, err := browser.ParseAct([]byte(`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"click","ref":"r"},"since":` + string(since) + `}}`))
		if (err == nil) != ok || ok && len(p.Request.Since) != n {
			t.Errorf("since of %d characters: %+v, %v", n, p, err)
		}
	}
}

// TestParseNewKinds: the pointer and keyboard kinds of ours, and select by
// value, parse with their fields, and refuse what they do not take.
func TestParseNewKinds(t *testing.T) {
	act := func(action string) (*browser.Action, error) {
		p, err := browser.ParseAct([]byte(`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":` + action + `}}`))
		if err != nil {
			return nil, err
		}
		return &p.Request.Action, nil
	}
	for _, tc := range []struct {
		action string
		check  func(a *browser.Action) bool
	}{
		{`{"kind":"dblclick","ref":"r1"}`, func(a *browser.Action) bool { return a.Kind == "dblclick" && a.Ref == "r1" }},
		{`{"kind":"hover","ref":"r1","expected":{"kind":"text","text":"Tip"}}`, func(a *browser.Action) bool { return a.Expected.Text == "Tip" }},
		{`{"kind":"chord","ref":"r1","key":"f","modifiers":["Control"]}`, func(a *browser.Action) bool {
			return a.Key == "f" && len(a.Modifiers) == 1 && a.Modifiers[0] == "Control"
		}},
		{`{"kind":"chord","ref":"r1","key":"o","modifiers":[]}`, func(a *browser.Action) bool { return a.Key == "o" && a.Modifiers != nil && len(a.Modifiers) == 0 }},
		{`{"kind":"chord","ref":"r1","key":"ArrowUp","modifiers":["Shift","Alt"]}`, func(a *browser.Action) bool { return len(a.Modifiers) == 2 }},
		{`{"kind":"chord","ref":"r1","key":"é","modifiers":["Alt"]}`, func(a *browser.Action) bool { return a.Key == "é" }},
		{`{"kind":"drag","ref":"r1","toRef":"r2"}`, func(a *browser.Action) bool { return a.ToRef == "r2" && a.DeltaX == nil }},
		{`{"kind":"drag","ref":"r1","deltaX":-5,"deltaY":0}`, func(a *browser.Action) bool { return *a.DeltaX == -5 && *a.DeltaY == 0 && a.ToRef == "" }},
		{`{"kind":"clickAt","ref":"r1","x":0,"y":1e4}`, func(a *browser.Action) bool { return *a.X == 0 && *a.Y == 10000 }},
		{`{"kind":"select","ref":"r1","value":""}`, func(a *browser.Action) bool { return a.Value != nil && *a.Value == "" && a.Option == nil }},
	} {
		a, err := act(tc.action)
		if err != nil || !tc.check(a) {
			t.Errorf("%s: %+v %v", tc.action, a, err)
		}
	}
	for _, bad := range []string{
		`{"kind":"dblclick"}`,
		`{"kind":"hover","ref":"r","key":"a"}`,
		`{"kind":"chord","ref":"r","key":"a"}`,
		`{"kind":"chord","ref":"r","key":"Enter","modifiers":[]}`,
		`{"kind":"chord","ref":"r","key":"F5","modifiers":["Control"]}`,
		`{"kind":"chord","ref":"r","key":"ab","modifiers":["Control"]}`,
		`{"kind":"chord","ref":"r","key":"","modifiers":["Control"]}`,
		`{"kind":"chord","ref":"r","key":" ","modifiers":[]}`,
		`{"kind":"chord","ref":"r","key":"
","modifiers":["Control"]}`,
		`{"kind":"chord","ref":"r","key":"a","modifiers":["Ctrl"]}`,
		`{"kind":"chord","ref":"r","key":"a","modifiers":["Shift","Shift"]}`,
		`{"kind":"chord","ref":"r","key":"a","modifiers":["Alt","Control","Meta","Shift","Alt"]}`,
		`{"kind":"chord","ref":"r","key":"a","modifiers":"Control"}`,
		`{"kind":"chord","ref":"r","key":"a","modifiers":[null]}`,
		`{"kind":"chord","ref":"r","key":"a","modifiers":["Control"],"shift":true}`,
		`{"kind":"drag","ref":"r"}`,
		`{"kind":"drag","ref":"r","toRef":""}`,
		`{"kind":"drag","ref":"r","toRef":"x","deltaX":1,"deltaY":1}`,
		`{"kind":"drag","ref":"r","deltaX":1}`,
		`{"kind":"drag","ref":"r","deltaX":0,"deltaY":0}`,
		`{"kind":"drag","ref":"r","deltaX":10001,"deltaY":0}`,
		`{"kind":"clickAt","ref":"r","x":1}`,
		`{"kind":"clickAt","ref":"r","x":-1,"y":0}`,
		`{"kind":"clickAt","ref":"r","x":1.5,"y":0}`,
		`{"kind":"clickAt","ref":"r","x":10001,"y":0}`,
		`{"kind":"select","ref":"r"}`,
		`{"kind":"select","ref":"r","option":"a","value":"a"}`,
		`{"kind":"select","ref":"r","value":null}`,
	} {
		if a, err := act(bad); err == nil {
			t.Errorf("%s: accepted as %+v", bad, a)
		}
	}
	// A character past the Basic Multilingual Plane is one code point (the
	// schema's count) but two UTF-16 units: refused by the rule.
	_, err := act(`{"kind":"chord","ref":"r","key":"😀","modifiers":["Control"]}`)
	if pe, ok := errors.AsType[*browser.ParamsError](err); !ok || pe.Rule != browser.RuleUTF16 {
		t.Fatalf("an astral key: %v", err)
	}
}

// TestParseRules: a params value refused only by a rule past the schema
// names it; one that breaks the schema names none.
func TestParseRules(t *testing.T) {
	_, err := browser.ParseAct([]byte(`{"sessionId":"s","request":{"requestId":"batch:1","leaseId":"l","documentEpoch":"e","action":{"kind":"click","ref":"r"}}}`))
	if pe, ok := errors.AsType[*browser.ParamsError](err); !ok || pe.Rule != browser.RuleReservedID {
		t.Fatalf("reserved ID: %v", err)
	}
	// Both a rule and a schema mismatch: the mismatch is reported.
	_, err = browser.ParseAct([]byte(`{"sessionId":"s","request":{"requestId":"batch:1","leaseId":"l","documentEpoch":"e","action":{"kind":"click"}}}`))
	if pe, ok := errors.AsType[*browser.ParamsError](err); !ok || pe.Rule != "" {
		t.Fatalf("reserved ID and no ref: %v", err)
	}
}

// FuzzParseParams: ParseAct, ParseBatch and ParseObserve never panic, and
// what one accepts it accepts again after encoding, unchanged.
func FuzzParseParams(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"click","ref":"r"}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"fill","ref":"r","text":"x","expected":{"kind":"value","value":"x"}}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"navigate","url":"https://a.test/"},"timeoutMs":5}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"click","ref":"r"},"since":"c-1"}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"wheel","ref":"r","deltaX":1,"deltaY":-2}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"press","ref":"r","key":"Tab","shift":true}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"select","ref":"r","option":"A"},"frame":{"frameId":"f","documentEpoch":"e"}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"chord","ref":"r","key":"z","modifiers":[]}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"chord","ref":"r","key":"Tab","modifiers":["Shift","Control"]}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"drag","ref":"r","toRef":"t","expected":{"kind":"text","text":"x"}}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"drag","ref":"r","deltaX":3,"deltaY":-4}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"clickAt","ref":"r","x":3,"y":4},"frame":{"frameId":"f","documentEpoch":"e"}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"select","ref":"r","value":"v"}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"hover","ref":"r"}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"dblclick","ref":"r"}}}`,
		`{"sessionId":"s","approvalId":"a","request":{"requestId":"b","leaseId":"l","documentEpoch":"e","steps":[{"action":{"kind":"check","ref":"r","checked":true}},{"action":{"kind":"scroll","deltaX":0,"deltaY":9}}]}}`,
		`{"sessionId":"s","leaseId":"l","cursor":"c","rootRef":"r","query":{"name":"Save","role":"button"},"frame":{"frameId":"f","documentEpoch":"e"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, browser.ParseAct)
		roundTrip(t, data, browser.ParseBatch)
		roundTrip(t, data, browser.ParseObserve)
	})
}

func roundTrip[T any](t *testing.T, data []byte, parse func([]byte) (*T, error)) {
	p, err := parse(data)
	if err != nil {
		return
	}
	again, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := parse(again)
	if err != nil || !reflect.DeepEqual(p, q) {
		t.Fatalf("accepted %s, then refused or changed its encoding %s: %v", data, again, err)
	}
}
