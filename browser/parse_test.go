package browser_test

import (
	"encoding/json"
	"errors"
	"reflect"
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
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"wheel","ref":"r","deltaX":1,"deltaY":-2}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"press","ref":"r","key":"Tab","shift":true}}}`,
		`{"sessionId":"s","request":{"requestId":"r","leaseId":"l","documentEpoch":"e","action":{"kind":"select","ref":"r","option":"A"},"frame":{"frameId":"f","documentEpoch":"e"}}}`,
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
