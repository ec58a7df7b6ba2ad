package wire_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dsh-browser/broker/browser"
)

// Params kinds, named by method in protocol/testdata/vectors.json: the
// params of the client methods whose shapes have the most rules (every
// action and expectation kind), checked by browser.ParseAct and friends,
// by the schema under $defs.<method>, and by the extension's interpreter.
const (
	kindAct     = "browser.act"
	kindBatch   = "browser.batch"
	kindObserve = "browser.observe"
)

func params(kind string) bool { return kind == kindAct || kind == kindBatch || kind == kindObserve }

// paramsTables are what the mutator draws from for params: their keys,
// enumerated values and numeric bounds.
var paramsTables = &tables{
	extraKeys: []string{"extra", "ref", "text", "key", "shift", "checked", "deltaX", "deltaY", "url", "option",
		"modifiers", "toRef", "x", "y",
		"expected", "value", "state", "kind", "frame", "timeoutMs", "requestId", "rootRef", "query", "cursor",
		"__proto__", "constructor", "Ref", ""},
	enumValues: map[string][]string{
		"kind": {"check", "click", "fill", "type", "append", "press", "scroll", "wheel", "navigate", "select",
			"dblclick", "hover", "chord", "drag", "clickAt", "value", "url", "text", "state", "doubleclick", "Click", ""},
		"key":   {"Enter", "Tab", "Space", "PageDown", "Delete", "F5", "enter", "a", "ab", " ", "\u0001", "😀", ""},
		"state": {"attached", "detached", "visible", "hidden", "enabled", "disabled", "checked", "unchecked", "focused", ""},
	},
	numbers: []string{"0", "1", "-1", "2", "10000", "10001", "-10000", "-10001", "30000", "30001", "1.0", "1e0",
		"-0", "0.0", "1.5", "1e4", "1e300", "9007199254740993", "8", "9"},
}

// act returns browser.act params around action (a JSON object) with
// request members extra (",k:v" text).
func act(action, extra string) string {
	return `{"sessionId":"s","request":{"requestId":"r1","leaseId":"l1","documentEpoch":"F:L","action":` + action + extra + `}}`
}

// Examples of every action kind with each expectation it allows.
var (
	actionExamples = []string{
		`{"kind":"check","ref":"r1","checked":true}`,
		`{"kind":"check","ref":"r1","checked":false,"expected":{"kind":"state","ref":"r2","state":"checked"}}`,
		`{"kind":"click","ref":"r1"}`,
		`{"kind":"click","ref":"r1","expected":{"kind":"text","text":"Clicks: 1"}}`,
		`{"kind":"click","ref":"r1","expected":{"kind":"value","value":""}}`,
		`{"kind":"fill","ref":"r1","text":"3","expected":{"kind":"value","value":"3"}}`,
		`{"kind":"fill","ref":"r1","text":""}`,
		`{"kind":"type","ref":"r1","text":"ab"}`,
		`{"kind":"append","ref":"r1","text":"cd","expected":{"kind":"url","url":"http://127.0.0.1/x"}}`,
		`{"kind":"press","ref":"r1","key":"Tab","shift":true}`,
		`{"kind":"press","ref":"r1","key":"Enter","expected":{"kind":"state","ref":"r1","state":"detached"}}`,
		`{"kind":"scroll","deltaX":0,"deltaY":400}`,
		`{"kind":"scroll","ref":"r1","deltaX":-20,"deltaY":0,"expected":{"kind":"text","text":"Row 40"}}`,
		`{"kind":"wheel","ref":"r1","deltaX":0,"deltaY":120}`,
		`{"kind":"navigate","url":"https://example.test/form"}`,
		`{"kind":"navigate","url":"http://127.0.0.1:8080/","expected":{"kind":"text","text":"Welcome"}}`,
		`{"kind":"select","ref":"r1","option":"Blue","expected":{"kind":"value","value":"blue"}}`,
		`{"kind":"select","ref":"r1","value":"blue","expected":{"kind":"value","value":"blue"}}`,
		`{"kind":"dblclick","ref":"r1","expected":{"kind":"text","text":"Editing"}}`,
		`{"kind":"hover","ref":"r1"}`,
		`{"kind":"chord","ref":"r1","key":"f","modifiers":["Control"]}`,
		`{"kind":"chord","ref":"r1","key":"ArrowLeft","modifiers":["Alt","Shift"],"expected":{"kind":"state","ref":"r2","state":"visible"}}`,
		`{"kind":"chord","ref":"r1","key":"o","modifiers":[]}`,
		`{"kind":"drag","ref":"r1","toRef":"r2","expected":{"kind":"text","text":"Dropped"}}`,
		`{"kind":"drag","ref":"r1","deltaX":40,"deltaY":-10}`,
		`{"kind":"clickAt","ref":"r1","x":12,"y":30}`,
	}
	observeExample = `{"sessionId":"s","leaseId":"l1","cursor":"c1","rootRef":"r1","query":{"name":"Save","role":"button"},"frame":{"frameId":"frame-1","documentEpoch":"E"}}`
)

func actBases() []string {
	out := make([]string, 0, len(actionExamples)+1)
	for _, a := range actionExamples {
		out = append(out, act(a, ""))
	}
	return append(out, act(`{"kind":"click","ref":"r1"}`, `,"timeoutMs":500,"frame":{"frameId":"frame-1","documentEpoch":"F:L"}`))
}

func batchBases() []string {
	steps := func(actions ...string) string {
		s := make([]string, len(actions))
		for i, a := range actions {
			s[i] = `{"action":` + a + `}`
		}
		return `{"sessionId":"s","approvalId":"a1","request":{"requestId":"b1","leaseId":"l1","documentEpoch":"F:L","steps":[` + strings.Join(s, ",") + `],"timeoutMs":30000}}`
	}
	return []string{
		steps(actionExamples[5], `{"kind":"check","ref":"r2","checked":true}`, `{"kind":"press","ref":"r1","key":"Enter"}`),
		steps(`{"kind":"scroll","deltaX":0,"deltaY":-1}`, actionExamples[14]),
		steps(actionExamples[16]),
	}
}

func observeBases() []string {
	return []string{observeExample, `{"sessionId":"s","leaseId":"l1"}`, `{"sessionId":"s","leaseId":"l1","rootRef":"r1"}`}
}

// goldenParams are hand-written params cases: every action kind, every
// expectation it allows and some it does not, the bounds of each field at
// and past its limit, and each rule past the schema.
func goldenParams() []golden {
	var out []golden
	add := func(kind, name, js string, valid bool, rule string) {
		out = append(out, golden{name: name, kind: kind, json: js, valid: valid, rule: rule})
	}
	ok := func(name, action string) { add(kindAct, name, act(action, ""), true, "") }
	bad := func(name, action string) { add(kindAct, name, act(action, ""), false, "") }
	for i, a := range actionExamples {
		ok(fmt.Sprintf("example %d", i), a)
	}

	// Which expectations go with which action.
	exp := map[string]string{
		"value": `{"kind":"value","value":"x"}`,
		"url":   `{"kind":"url","url":"https://example.test/"}`,
		"text":  `{"kind":"text","text":"x"}`,
		"state": `{"kind":"state","ref":"r2","state":"visible"}`,
	}
	bases := map[string]string{
		"check":    `{"kind":"check","ref":"r1","checked":true`,
		"click":    `{"kind":"click","ref":"r1"`,
		"fill":     `{"kind":"fill","ref":"r1","text":"x"`,
		"type":     `{"kind":"type","ref":"r1","text":"x"`,
		"append":   `{"kind":"append","ref":"r1","text":"x"`,
		"press":    `{"kind":"press","ref":"r1","key":"Enter"`,
		"scroll":   `{"kind":"scroll","deltaX":0,"deltaY":1`,
		"wheel":    `{"kind":"wheel","ref":"r1","deltaX":1,"deltaY":0`,
		"navigate": `{"kind":"navigate","url":"https://example.test/"`,
		"select":   `{"kind":"select","ref":"r1","option":"Blue"`,
		"dblclick": `{"kind":"dblclick","ref":"r1"`,
		"hover":    `{"kind":"hover","ref":"r1"`,
		"chord":    `{"kind":"chord","ref":"r1","key":"k","modifiers":["Meta"]`,
		"drag":     `{"kind":"drag","ref":"r1","toRef":"r2"`,
		"clickAt":  `{"kind":"clickAt","ref":"r1","x":1,"y":2`,
	}
	for _, action := range slices.Sorted(maps.Keys(bases)) {
		base := bases[action]
		for _, e := range slices.Sorted(maps.Keys(exp)) {
			ej := exp[e]
			add(kindAct, action+" expecting "+e, act(base+`,"expected":`+ej+`}`, ""), browser.ExpectationAllowed(action, e), "")
		}
		add(kindAct, action+" with an unknown key", act(base+`,"extra":1}`, ""), false, "")
		add(kindAct, action+" expecting nothing known", act(base+`,"expected":{"kind":"title","text":"x"}}`, ""), false, "")
		add(kindAct, action+" with expected null", act(base+`,"expected":null}`, ""), false, "")
	}

	// Fields that belong to another kind.
	bad("click with text", `{"kind":"click","ref":"r1","text":"x"}`)
	bad("fill without text", `{"kind":"fill","ref":"r1"}`)
	bad("fill with key", `{"kind":"fill","ref":"r1","text":"x","key":"Enter"}`)
	bad("press with text", `{"kind":"press","ref":"r1","key":"Enter","text":"x"}`)
	bad("press with shift null", `{"kind":"press","ref":"r1","key":"Enter","shift":null}`)
	bad("press shift as string", `{"kind":"press","ref":"r1","key":"Enter","shift":"true"}`)
	bad("press F5", `{"kind":"press","ref":"r1","key":"F5"}`)
	bad("check without checked", `{"kind":"check","ref":"r1"}`)
	bad("check checked 1", `{"kind":"check","ref":"r1","checked":1}`)
	bad("check without ref", `{"kind":"check","checked":true}`)
	bad("click without ref", `{"kind":"click"}`)
	ok("scroll without ref", `{"kind":"scroll","deltaX":1,"deltaY":0}`)
	bad("wheel without ref", `{"kind":"wheel","deltaX":1,"deltaY":0}`)
	bad("scroll with text", `{"kind":"scroll","deltaX":1,"deltaY":0,"text":"x"}`)
	bad("navigate with ref", `{"kind":"navigate","ref":"r1","url":"https://example.test/"}`)
	bad("navigate without url", `{"kind":"navigate"}`)
	bad("select without option", `{"kind":"select","ref":"r1"}`)
	bad("select with option and value", `{"kind":"select","ref":"r1","option":"a","value":"a"}`)
	bad("select value null", `{"kind":"select","ref":"r1","value":null}`)
	bad("kind doubleclick", `{"kind":"doubleclick","ref":"r1"}`)
	bad("hover without ref", `{"kind":"hover"}`)
	bad("dblclick with text", `{"kind":"dblclick","ref":"r1","text":"x"}`)
	bad("chord without modifiers", `{"kind":"chord","ref":"r1","key":"a"}`)
	bad("chord of a named key without modifiers", `{"kind":"chord","ref":"r1","key":"Enter","modifiers":[]}`)
	ok("chord of a named key with all four modifiers", `{"kind":"chord","ref":"r1","key":"Enter","modifiers":["Alt","Control","Meta","Shift"]}`)
	bad("chord with five modifiers", `{"kind":"chord","ref":"r1","key":"a","modifiers":["Alt","Control","Meta","Shift","Alt"]}`)
	bad("chord with a modifier twice", `{"kind":"chord","ref":"r1","key":"a","modifiers":["Alt","Alt"]}`)
	bad("chord with Ctrl", `{"kind":"chord","ref":"r1","key":"a","modifiers":["Ctrl"]}`)
	bad("chord of two characters", `{"kind":"chord","ref":"r1","key":"ab","modifiers":["Control"]}`)
	bad("chord of an empty key", `{"kind":"chord","ref":"r1","key":"","modifiers":["Control"]}`)
	bad("chord of a space", `{"kind":"chord","ref":"r1","key":" ","modifiers":["Control"]}`)
	bad("chord of a control character", `{"kind":"chord","ref":"r1","key":"\u001b","modifiers":["Control"]}`)
	bad("chord of F5", `{"kind":"chord","ref":"r1","key":"F5","modifiers":["Control"]}`)
	bad("chord with shift", `{"kind":"chord","ref":"r1","key":"a","modifiers":[],"shift":true}`)
	add(kindAct, "chord of an astral character", act(`{"kind":"chord","ref":"r1","key":"😀","modifiers":["Control"]}`, ""), false, browser.RuleUTF16)
	bad("drag without a destination", `{"kind":"drag","ref":"r1"}`)
	bad("drag with toRef and deltas", `{"kind":"drag","ref":"r1","toRef":"r2","deltaX":1,"deltaY":1}`)
	bad("drag with one delta", `{"kind":"drag","ref":"r1","deltaX":1}`)
	bad("drag with an empty toRef", `{"kind":"drag","ref":"r1","toRef":""}`)
	ok("drag toRef of 128", `{"kind":"drag","ref":"r1","toRef":"`+strings.Repeat("x", 128)+`"}`)
	bad("drag toRef of 129", `{"kind":"drag","ref":"r1","toRef":"`+strings.Repeat("x", 129)+`"}`)
	bad("clickAt without y", `{"kind":"clickAt","ref":"r1","x":1}`)
	for _, p := range []struct {
		x, y  string
		valid bool
	}{
		{"0", "0", true}, {"10000", "10000", true}, {"10001", "0", false}, {"0", "10001", false}, {"-1", "0", false},
		{"-0", "0", true}, {"1.5", "0", false}, {"1e4", "0", true}, {`"1"`, "0", false}, {"null", "0", false},
	} {
		add(kindAct, fmt.Sprintf("clickAt at %s %s", p.x, p.y), act(`{"kind":"clickAt","ref":"r1","x":`+p.x+`,"y":`+p.y+`}`, ""), p.valid, "")
	}
	bad("kind Click", `{"kind":"Click","ref":"r1"}`)
	bad("no kind", `{"ref":"r1"}`)
	bad("kind 1", `{"kind":1,"ref":"r1"}`)

	// Deltas: integers within ±10,000, not both 0.
	for _, d := range []struct {
		x, y  string
		valid bool
	}{
		{"0", "0", false}, {"-0", "0", false}, {"0.0", "0", false}, {"0", "1", true}, {"1", "0", true},
		{"10000", "-10000", true}, {"10001", "0", false}, {"0", "-10001", false}, {"1.0", "0", true},
		{"1e4", "0", true}, {"1e5", "0", false}, {"1.5", "0", false}, {`"1"`, "0", false}, {"null", "1", false},
		{"true", "1", false},
	} {
		for _, k := range []string{"scroll", "wheel", "drag"} {
			ref := `,"ref":"r1"`
			add(kindAct, fmt.Sprintf("%s deltas %s %s", k, d.x, d.y), act(`{"kind":"`+k+`"`+ref+`,"deltaX":`+d.x+`,"deltaY":`+d.y+`}`, ""), d.valid, "")
		}
	}
	bad("scroll without deltaY", `{"kind":"scroll","deltaX":1}`)

	// Bounds at and past each limit.
	long := func(n int) string { return strings.Repeat("x", n) }
	emoji := func(n int) string { return strings.Repeat("😀", n) }
	ok("ref of 128", `{"kind":"click","ref":"`+long(128)+`"}`)
	bad("ref of 129", `{"kind":"click","ref":"`+long(129)+`"}`)
	bad("empty ref", `{"kind":"click","ref":""}`)
	ok("fill text of 10000", `{"kind":"fill","ref":"r","text":"`+long(10000)+`"}`)
	bad("fill text of 10001", `{"kind":"fill","ref":"r","text":"`+long(10001)+`"}`)
	ok("url of 8192", `{"kind":"navigate","url":"`+long(8192)+`"}`)
	bad("url of 8193", `{"kind":"navigate","url":"`+long(8193)+`"}`)
	bad("empty url", `{"kind":"navigate","url":""}`)
	ok("option of 1000", `{"kind":"select","ref":"r","option":"`+long(1000)+`"}`)
	bad("option of 1001", `{"kind":"select","ref":"r","option":"`+long(1001)+`"}`)
	bad("empty option", `{"kind":"select","ref":"r","option":""}`)
	ok("value of 1000", `{"kind":"select","ref":"r","value":"`+long(1000)+`"}`)
	bad("value of 1001", `{"kind":"select","ref":"r","value":"`+long(1001)+`"}`)
	ok("empty value", `{"kind":"select","ref":"r","value":""}`)
	ok("expected text of 2000", `{"kind":"click","ref":"r","expected":{"kind":"text","text":"`+long(2000)+`"}}`)
	bad("expected text of 2001", `{"kind":"click","ref":"r","expected":{"kind":"text","text":"`+long(2001)+`"}}`)
	bad("expected text blank", `{"kind":"click","ref":"r","expected":{"kind":"text","text":" \t\n"}}`)
	bad("expected text of no-break spaces", `{"kind":"click","ref":"r","expected":{"kind":"text","text":"\u00a0\u3000"}}`)
	ok("expected text with a zero-width space", `{"kind":"click","ref":"r","expected":{"kind":"text","text":"\u200b"}}`)
	ok("expected value of 10000", `{"kind":"fill","ref":"r","text":"","expected":{"kind":"value","value":"`+long(10000)+`"}}`)
	bad("expected value of 10001", `{"kind":"fill","ref":"r","text":"","expected":{"kind":"value","value":"`+long(10001)+`"}}`)
	bad("expected value missing", `{"kind":"fill","ref":"r","text":"","expected":{"kind":"value"}}`)
	ok("expected url of 8192", `{"kind":"navigate","url":"u","expected":{"kind":"url","url":"`+long(8192)+`"}}`)
	bad("expected url of 8193", `{"kind":"navigate","url":"u","expected":{"kind":"url","url":"`+long(8193)+`"}}`)
	bad("expected state ref of 129", `{"kind":"click","ref":"r","expected":{"kind":"state","ref":"`+long(129)+`","state":"visible"}}`)
	bad("expected state focused", `{"kind":"click","ref":"r","expected":{"kind":"state","ref":"r","state":"focused"}}`)
	bad("expected state without ref", `{"kind":"click","ref":"r","expected":{"kind":"state","state":"visible"}}`)
	for _, st := range browser.ElementStates {
		ok("expected state "+st, `{"kind":"click","ref":"r","expected":{"kind":"state","ref":"r2","state":"`+st+`"}}`)
	}

	// UTF-16 lengths: a rule past the schema, which counts code points.
	add(kindAct, "ref of 64 astral characters", act(`{"kind":"click","ref":"`+emoji(64)+`"}`, ""), true, "")
	add(kindAct, "ref of 65 astral characters", act(`{"kind":"click","ref":"`+emoji(65)+`"}`, ""), false, browser.RuleUTF16)
	add(kindAct, "ref of 128 astral characters", act(`{"kind":"click","ref":"`+emoji(128)+`"}`, ""), false, browser.RuleUTF16)
	add(kindAct, "ref of 129 astral characters", act(`{"kind":"click","ref":"`+emoji(129)+`"}`, ""), false, "")
	add(kindAct, "fill text of 5001 astral characters", act(`{"kind":"fill","ref":"r","text":"`+emoji(5001)+`"}`, ""), false, browser.RuleUTF16)

	// The request around the action.
	add(kindAct, "timeoutMs 30000", act(`{"kind":"click","ref":"r"}`, `,"timeoutMs":30000`), true, "")
	add(kindAct, "timeoutMs 30001", act(`{"kind":"click","ref":"r"}`, `,"timeoutMs":30001`), false, "")
	add(kindAct, "timeoutMs 0", act(`{"kind":"click","ref":"r"}`, `,"timeoutMs":0`), false, "")
	add(kindAct, "timeoutMs null", act(`{"kind":"click","ref":"r"}`, `,"timeoutMs":null`), false, "")
	add(kindAct, "request extra", act(`{"kind":"click","ref":"r"}`, `,"extra":1`), false, "")
	add(kindAct, "action frame", act(`{"kind":"click","ref":"r","frame":{"frameId":"f","documentEpoch":"F:L"}}`, ""), false, "")
	add(kindAct, "reserved request ID", strings.Replace(act(`{"kind":"click","ref":"r"}`, ""), `"r1"`, `"batch:x:0"`, 1), false, browser.RuleReservedID)
	frame := func(epoch string) string { return `,"frame":{"frameId":"frame-1","documentEpoch":"` + epoch + `"}` }
	add(kindAct, "frame click", act(`{"kind":"click","ref":"r"}`, frame("F:L")), true, "")
	add(kindAct, "frame fill", act(`{"kind":"fill","ref":"r","text":"x"}`, frame("F:L")), true, "")
	add(kindAct, "frame of another epoch", act(`{"kind":"click","ref":"r"}`, frame("other")), false, browser.RuleFrameEpoch)
	add(kindAct, "frame check", act(`{"kind":"check","ref":"r","checked":true}`, frame("F:L")), false, browser.RuleFrameAction)
	add(kindAct, "frame chord", act(`{"kind":"chord","ref":"r","key":"b","modifiers":["Control"]}`, frame("F:L")), true, "")
	add(kindAct, "frame drag", act(`{"kind":"drag","ref":"r","toRef":"r2"}`, frame("F:L")), true, "")
	add(kindAct, "frame select by value", act(`{"kind":"select","ref":"r","value":"v"}`, frame("F:L")), false, browser.RuleFrameAction)
	add(kindAct, "frame navigate", act(`{"kind":"navigate","url":"https://example.test/"}`, frame("F:L")), false, browser.RuleFrameAction)
	add(kindAct, "frame click expecting a value", act(`{"kind":"click","ref":"r","expected":{"kind":"value","value":"x"}}`, frame("F:L")), false, browser.RuleFrameAction)
	add(kindAct, "frame click expecting text", act(`{"kind":"click","ref":"r","expected":{"kind":"text","text":"x"}}`, frame("F:L")), true, "")
	add(kindAct, "frame without documentEpoch", act(`{"kind":"click","ref":"r"}`, `,"frame":{"frameId":"f"}`), false, "")
	add(kindAct, "sessionId missing", `{"request":{"requestId":"r1","leaseId":"l1","documentEpoch":"F:L","action":{"kind":"click","ref":"r"}}}`, false, "")
	add(kindAct, "sessionId of 256", strings.Replace(act(`{"kind":"click","ref":"r"}`, ""), `"s"`, `"`+long(256)+`"`, 1), true, "")
	add(kindAct, "sessionId of 257", strings.Replace(act(`{"kind":"click","ref":"r"}`, ""), `"s"`, `"`+long(257)+`"`, 1), false, "")
	add(kindAct, "params an array", `[]`, false, "")

	// Batches.
	b := batchBases()
	add(kindBatch, "three steps", b[0], true, "")
	add(kindBatch, "navigate last", b[1], true, "")
	add(kindBatch, "select alone", b[2], true, "")
	add(kindBatch, "navigate first", strings.Replace(b[1], `{"action":{"kind":"scroll","deltaX":0,"deltaY":-1}}`, `{"action":{"kind":"navigate","url":"x"}}`, 1), false, browser.RuleNavigateLast)
	stepsOf := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = `{"action":{"kind":"click","ref":"r"}}`
		}
		return `{"sessionId":"s","approvalId":"a","request":{"requestId":"b","leaseId":"l","documentEpoch":"e","steps":[` + strings.Join(s, ",") + `]}}`
	}
	for _, n := range []int{0, 1, 8, 9} {
		add(kindBatch, fmt.Sprintf("%d steps", n), stepsOf(n), n >= 1 && n <= browser.MaxBatchSteps, "")
	}
	add(kindBatch, "step with a frame", strings.Replace(stepsOf(1), `{"action"`, `{"frame":{"frameId":"f","documentEpoch":"e"},"action"`, 1), false, "")
	add(kindBatch, "step timeoutMs 30001", strings.Replace(stepsOf(1), `{"action"`, `{"timeoutMs":30001,"action"`, 1), false, "")
	add(kindBatch, "reserved request ID", strings.Replace(stepsOf(1), `"requestId":"b"`, `"requestId":"batch:b"`, 1), false, browser.RuleReservedID)
	add(kindBatch, "no approvalId", strings.Replace(stepsOf(1), `"approvalId":"a",`, ``, 1), false, "")

	// Observe.
	add(kindObserve, "every option", observeExample, true, "")
	add(kindObserve, "rootRef alone", `{"sessionId":"s","leaseId":"l","rootRef":"r1"}`, true, "")
	add(kindObserve, "empty rootRef", `{"sessionId":"s","leaseId":"l","rootRef":""}`, false, "")
	add(kindObserve, "rootRef of 129", `{"sessionId":"s","leaseId":"l","rootRef":"`+long(129)+`"}`, false, "")
	add(kindObserve, "empty cursor", `{"sessionId":"s","leaseId":"l","cursor":""}`, true, "")
	add(kindObserve, "blank query", `{"sessionId":"s","leaseId":"l","query":{"name":"  "}}`, false, "")
	add(kindObserve, "query role with a digit first", `{"sessionId":"s","leaseId":"l","query":{"name":"a","role":"1a"}}`, false, "")
	add(kindObserve, "query role empty", `{"sessionId":"s","leaseId":"l","query":{"name":"a","role":""}}`, false, "")
	add(kindObserve, "query role of 80", `{"sessionId":"s","leaseId":"l","query":{"name":"a","role":"a`+strings.Repeat("b", 79)+`"}}`, true, "")
	add(kindObserve, "query role of 81", `{"sessionId":"s","leaseId":"l","query":{"name":"a","role":"a`+strings.Repeat("b", 80)+`"}}`, false, "")
	add(kindObserve, "unknown option", `{"sessionId":"s","leaseId":"l","limit":1}`, false, "")
	return out
}
