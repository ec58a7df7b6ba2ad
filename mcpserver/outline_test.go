package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

func sptr(s string) *string { return &s }
func iptr(n int) *int       { return &n }

// formObservation is what browser.observe answers on /form after filling
// the name.
func formObservation() *browser.Observation {
	return &browser.Observation{
		Format: "full", Cursor: "c0011223344556677", Tab: "inst:7", URL: "http://127.0.0.1:41234/form", Title: "DSH demo",
		DocumentEpoch: "8E1F0C2A9B7D4E3F:4C2B1A0F9E8D7C6B", Revision: 2,
		Nodes: []browser.NodeRef{
			{ID: "r00000000000000a1", Role: "main", Name: "Greeting", Kind: "region"},
			{ID: "r00000000000000a2", Role: "textbox", Name: "Your name", Editable: true, Value: sptr("Ada")},
			{ID: "r00000000000000a3", Role: "checkbox", Name: "Send me updates", Checked: false},
			{ID: "r00000000000000a4", Role: "button", Name: "Greet"},
			{ID: "r00000000000000a5", Role: "link", Name: "Go to the counter"},
		},
		Text:  []string{"DSH demo", "Your name", "Send me updates", "Greet", "Hello,\n  Ada!", "Go to the counter"},
		Scope: browser.Scope{Kind: "document"},
	}
}

func TestOutline(t *testing.T) {
	got := Outline(formObservation(), "L1")
	want := `page "DSH demo" http://127.0.0.1:41234/form
leaseId=L1 documentEpoch=8E1F0C2A9B7D4E3F:4C2B1A0F9E8D7C6B
- region main "Greeting" [ref=r00000000000000a1]
- textbox "Your name" [ref=r00000000000000a2] value="Ada"
- checkbox "Send me updates" [ref=r00000000000000a3] checked=false
- button "Greet" [ref=r00000000000000a4]
- link "Go to the counter" [ref=r00000000000000a5]
text:
  DSH demo
  Hello, Ada!
`
	if got != want {
		t.Errorf("outline:\n%s\nwant:\n%s", got, want)
	}
}

func TestOutlineStates(t *testing.T) {
	o := &browser.Observation{
		URL: "https://example.test/", Title: `Say "hi"`, DocumentEpoch: "F:L", Truncated: true,
		Nodes: []browser.NodeRef{
			{ID: "r1", Role: "checkbox", Name: "On", Checked: true, Disabled: true},
			{ID: "r2", Role: "checkbox", Name: "Some", Checked: "mixed"},
			{ID: "r3", Role: "generic", Name: "", Editable: true, Value: sptr("")},
			{ID: "r4", Role: "button", Name: ""},
			{ID: "r5", Role: "region", Name: "Group 1", Kind: "region"},
		},
		Scope: browser.Scope{Kind: "query", Query: &browser.Query{Name: "On", Role: "checkbox"}},
	}
	got := Outline(o, "L2")
	for _, want := range []string{
		`page "Say \"hi\"" https://example.test/  (truncated)` + "\n",
		"query name=\"On\" role=checkbox: 5 matches\n",
		"leaseId=L2 documentEpoch=F:L\n",
		`- checkbox "On" [ref=r1] checked=true disabled` + "\n",
		`- checkbox "Some" [ref=r2] checked=mixed` + "\n",
		`- generic [ref=r3] value="" editable` + "\n",
		"- button [ref=r4]\n",
		"- region \"Group 1\" [ref=r5]\n",
		"(truncated: the page has more than this",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("outline lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "text:") {
		t.Errorf("an observation without text has a text section:\n%s", got)
	}
	empty := Outline(&browser.Observation{Title: "Blank", URL: "http://x.test/", DocumentEpoch: "F:L"}, "L")
	if !strings.Contains(empty, "(no controls)") {
		t.Errorf("empty outline:\n%s", empty)
	}
}

// bigObservation is browser.observe on /big: the budgets are reached
// (120 controls, 24 named regions, 240 text fragments).
func bigObservation() *browser.Observation {
	o := &browser.Observation{
		Format: "full", Cursor: "c0011223344556677", Tab: "inst:9", URL: "http://127.0.0.1:41234/big", Title: "Big page",
		DocumentEpoch: "8E1F0C2A9B7D4E3F8E1F0C2A9B7D4E3F:4C2B1A0F9E8D7C6B4C2B1A0F9E8D7C6B", Revision: 1, Truncated: true,
		Scope: browser.Scope{Kind: "document"},
	}
	o.Nodes = append(o.Nodes, browser.NodeRef{ID: "r0000000000000000", Role: "main", Kind: "region"})
	for i := 1; i <= 120; i++ {
		if i%40 == 1 {
			o.Nodes = append(o.Nodes, browser.NodeRef{ID: fmt.Sprintf("r%016x", 10000+i), Role: "region", Name: fmt.Sprintf("Group %d", i/40+1), Kind: "region"})
		}
		o.Nodes = append(o.Nodes, browser.NodeRef{ID: fmt.Sprintf("r%016x", i), Role: "button", Name: fmt.Sprintf("Item %d", i)})
	}
	o.Text = append(o.Text, "Big page")
	for i := 1; len(o.Text) < 240; i++ {
		if i <= 120 {
			o.Text = append(o.Text, fmt.Sprintf("Item %d", i))
		} else {
			o.Text = append(o.Text, fmt.Sprintf("Paragraph %d: a sentence of filler text to read.", i-120))
		}
	}
	return o
}

// TestOutlineSmallerThanJSON checks that the outline of an observation is
// smaller than the JSON the broker sends for it. The same comparison on
// real pages runs in TestWithBroker.
func TestOutlineSmallerThanJSON(t *testing.T) {
	for name, o := range map[string]*browser.Observation{"/form": formObservation(), "/big": bigObservation()} {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		outline := Outline(o, "L0123456789abcdef")
		ratio := float64(len(outline)) / float64(len(raw))
		t.Logf("%s: outline %d bytes, JSON %d bytes, ratio %.2f", name, len(outline), len(raw), ratio)
		if ratio >= 1 {
			t.Errorf("%s: the outline (%d bytes) is not smaller than the JSON (%d bytes)", name, len(outline), len(raw))
		}
	}
}

func TestRenderAction(t *testing.T) {
	click := &browser.Action{Kind: "click", Ref: "r00000000000000a4"}
	for _, tc := range []struct {
		name string
		res  browser.ActionResult
		want []string
	}{
		{"succeeded", browser.ActionResult{RequestID: "q1", Outcome: "succeeded", Dispatch: "observed", Postcondition: "passed", Observation: formObservation()},
			[]string{"click r00000000000000a4: succeeded (dispatch observed, postcondition passed)\n", "Done: the expected text is on the page.", "requestId=q1\n", "\npage \"DSH demo\"", "leaseId=L documentEpoch="}},
		{"unverified", browser.ActionResult{RequestID: "q2", Outcome: "unknown", Dispatch: "observed", Postcondition: "unverified", Observation: formObservation()},
			[]string{"unknown (dispatch observed, postcondition unverified)", "Done, not verified (no action.expected was given)", "- button \"Greet\""}},
		{"stale", browser.ActionResult{RequestID: "q3", Outcome: "failed", Dispatch: "notDispatched", Postcondition: "unverified", Code: wire.CodeStaleTarget},
			[]string{"failed (dispatch notDispatched, postcondition unverified, code STALE_TARGET)", "Nothing was done. STALE_TARGET: the page changed: call browser_observe again and use the new refs and documentEpoch.", "(no observation of the page afterwards: call browser_observe)"}},
		{"postcondition failed", browser.ActionResult{RequestID: "q4", Outcome: "failed", Dispatch: "observed", Postcondition: "failed", Observation: formObservation()},
			[]string{"the expected text did not appear in time"}},
		{"dispatched, unverifiable", browser.ActionResult{RequestID: "q5", Outcome: "unknown", Dispatch: "dispatched", Postcondition: "unverified", Code: wire.CodeLeaseRevoked},
			[]string{"The input was sent but its effect is not confirmed", "LEASE_REVOKED: the lease ended (Stop, navigation away, release or expiry): claim the tab again."}},
		{"recovery", browser.ActionResult{RequestID: "q6", Outcome: "unknown", Dispatch: "dispatched", Postcondition: "unverified", Code: wire.CodeRecoveryRequired,
			Recovery: &browser.Recovery{State: "reserved", Dispatch: "notDispatched"}},
			[]string{"RECOVERY_REQUIRED: this request may already have run: check the page (observe) before trying again with a new requestId.", "Known: state reserved"}},
		{"cancelled", browser.ActionResult{RequestID: "q7", Outcome: "cancelled", Dispatch: "notDispatched", Postcondition: "unverified", Code: wire.CodeUserStopped},
			[]string{"Nothing was done. USER_STOPPED: the user pressed Stop"}},
		{"covered", browser.ActionResult{RequestID: "q8", Outcome: "failed", Dispatch: "notDispatched", Postcondition: "unverified", Code: wire.CodeNotActionable,
			CoveredBy: &browser.Cover{Tag: "div", Role: "dialog", Name: "Cookie consent", Ref: "r00000000000000c1"}},
			[]string{"Nothing was done. NOT_ACTIONABLE", `Covered by dialog "Cookie consent" (div) [ref=r00000000000000c1]: it would get the click. Close, accept or dismiss it first`}},
		{"covered by an overlay", browser.ActionResult{RequestID: "q9", Outcome: "failed", Dispatch: "notDispatched", Postcondition: "unverified", Code: wire.CodeNotActionable,
			CoveredBy: &browser.Cover{Tag: "div"}},
			[]string{"Covered by div: it would get the click."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderAction(&tc.res, click, "L", nil)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
		})
	}
	// A navigation says where it landed (a redirect or a router may have
	// moved it); with an expectation, what the expectation showed.
	landed := formObservation()
	landed.URL = "https://app.test/#/"
	navigate := &browser.Action{Kind: "navigate", URL: "https://app.test/"}
	expecting := &browser.Action{Kind: "navigate", URL: "https://app.test/", Expected: &browser.Expected{Kind: browser.ExpectText, Text: "Hi"}}
	for _, tc := range []struct {
		name string
		a    *browser.Action
		res  browser.ActionResult
		want []string
	}{
		{"navigate", navigate, browser.ActionResult{RequestID: "n1", Outcome: "succeeded", Dispatch: "observed", Postcondition: "passed", Observation: landed},
			[]string{"Done: the new page loaded at https://app.test/#/."}},
		{"navigate expecting text", expecting, browser.ActionResult{RequestID: "n2", Outcome: "succeeded", Dispatch: "observed", Postcondition: "passed", Observation: landed},
			[]string{"Done: the expected text is on the page."}},
		{"navigate that did not load", navigate, browser.ActionResult{RequestID: "n3", Outcome: "failed", Dispatch: "observed", Postcondition: "failed", Observation: landed},
			[]string{"the new page did not load in time"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderAction(&tc.res, tc.a, "L", nil)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestRenderChange: an action asked with since is answered with what
// changed, against the observation acted on: the page line, the IDs the
// next action needs, each element added (with its ref), changed (with what
// it was) or gone, and the text that came and went; nothing else.
func TestRenderChange(t *testing.T) {
	before := formObservation()
	after := formObservation()
	after.Cursor = "c1"
	after.Nodes[2].Checked = true
	after.Nodes = append(after.Nodes[:4], browser.NodeRef{ID: "r00000000000000b1", Role: "button", Name: "Undo"})
	after.Text = []string{"DSH demo", "Your name", "Send me updates", "Greet", "Saved.", "Undo"}
	d := browser.ObservationDelta{Format: "delta", Cursor: "c1", BaseCursor: before.Cursor, URL: after.URL, Title: after.Title, DocumentEpoch: after.DocumentEpoch,
		Nodes: browser.NodesDelta{Upsert: []browser.NodeRef{after.Nodes[2], after.Nodes[4]}, Remove: []string{"r00000000000000a5"}},
		Text:  &browser.TextSplice{Start: 4, DeleteCount: 2, Insert: []string{"Saved.", "Undo"}}}
	res := browser.ActionResult{RequestID: "q1", Outcome: "succeeded", Dispatch: "observed", Postcondition: "passed", Change: &d}
	got := RenderAction(&res, &browser.Action{Kind: "check", Ref: "r00000000000000a3", Checked: new(true)}, "L", before)
	want := `check r00000000000000a3: succeeded (dispatch observed, postcondition passed)
Done: the control is in the requested state.
requestId=q1

page "DSH demo" http://127.0.0.1:41234/form
leaseId=L documentEpoch=8E1F0C2A9B7D4E3F:4C2B1A0F9E8D7C6B
changes since your last view (other refs still hold):
~ checkbox "Send me updates" [ref=r00000000000000a3] checked=true (was checked=false)
+ button "Undo" [ref=r00000000000000b1]
- gone: link "Go to the counter"
- text: Hello, Ada!
- text: Go to the counter
+ text: Saved.
+ text: Undo
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if nodes, text := d.Apply(before.Nodes, before.Text); Outline(&browser.Observation{Nodes: nodes, Text: text}, "L") != Outline(&browser.Observation{Nodes: after.Nodes, Text: after.Text}, "L") {
		t.Fatalf("the test's change is not the page's: %v %q", nodes, text)
	}

	// Nothing changed; then more changes than the answer lists.
	d = browser.ObservationDelta{Cursor: "c2", BaseCursor: before.Cursor, Title: before.Title, Nodes: browser.NodesDelta{}}
	if got := RenderAction(&res, click0, "L", before); !strings.Contains(got, "nothing on the page changed since your last view") {
		t.Fatalf("no change:\n%s", got)
	}
	d.Text = &browser.TextSplice{Start: 6}
	for i := range maxChangeLines + 5 {
		d.Text.Insert = append(d.Text.Insert, fmt.Sprint("line ", i))
	}
	got = RenderAction(&res, click0, "L", before)
	if !strings.Contains(got, "+ text: line 29\n… and 5 more changes: browser_observe shows the whole page\n") || strings.Contains(got, "line 30") {
		t.Fatalf("past the bound:\n%s", got)
	}
}

var click0 = &browser.Action{Kind: "click", Ref: "r00000000000000a4"}

// TestRenderChangeSinceSearch: a change since a search says so, and that an
// element that went from its matches may still be on the page.
func TestRenderChangeSinceSearch(t *testing.T) {
	scope := browser.Scope{Kind: "query", Query: &browser.Query{Name: "Target", Role: "button"}}
	before := &browser.Observation{Cursor: "c0", Title: "Big page", URL: "http://127.0.0.1:41234/big", DocumentEpoch: "E", Scope: scope,
		Nodes: []browser.NodeRef{{ID: "r00000000000000a4", Role: "button", Name: "Target"}}, Text: []string{}}
	d := browser.ObservationDelta{Format: "delta", Cursor: "c1", BaseCursor: "c0", Title: before.Title, URL: before.URL, DocumentEpoch: "E", Scope: scope,
		Nodes: browser.NodesDelta{Upsert: []browser.NodeRef{}, Remove: []string{"r00000000000000a4"}}}
	res := browser.ActionResult{RequestID: "q1", Outcome: "unknown", Dispatch: "observed", Postcondition: "unverified", Change: &d}
	got := RenderAction(&res, click0, "L", before)
	if !strings.Contains(got, "changes among the matches of name=\"Target\" role=button since your search") ||
		!strings.Contains(got, "\n- no longer matches: button \"Target\"\n") || strings.Contains(got, "gone") {
		t.Fatalf("a change since a search:\n%s", got)
	}
	d.Nodes.Remove = []string{}
	if got := RenderAction(&res, click0, "L", before); !strings.Contains(got, "nothing changed among the matches of name=\"Target\" role=button") {
		t.Fatalf("no change since a search:\n%s", got)
	}
}

// TestDescribeNewKinds: each action kind reads as what it does.
func TestDescribeNewKinds(t *testing.T) {
	labels := map[string]string{"r1": `button "Save"`, "r2": `listitem "Done"`}
	for _, tc := range []struct {
		a    browser.Action
		want string
	}{
		{browser.Action{Kind: "dblclick", Ref: "r1"}, `dblclick button "Save"`},
		{browser.Action{Kind: "hover", Ref: "r1"}, `hover button "Save"`},
		{browser.Action{Kind: "chord", Ref: "r1", Key: "s", Modifiers: []string{"Control", "Shift"}}, `press Control+Shift+s on button "Save"`},
		{browser.Action{Kind: "chord", Ref: "r1", Key: "o", Modifiers: []string{}}, `press o on button "Save"`},
		{browser.Action{Kind: "drag", Ref: "r1", ToRef: "r2"}, `drag button "Save" onto listitem "Done"`},
		{browser.Action{Kind: "drag", Ref: "r1", DeltaX: iptr(5), DeltaY: iptr(-2)}, `drag button "Save" by (5, -2)`},
		{browser.Action{Kind: "clickAt", Ref: "r1", X: iptr(3), Y: iptr(4)}, `click button "Save" at (3, 4)`},
		{browser.Action{Kind: "select", Ref: "r1", Value: sptr("de")}, `select the value "de" in button "Save"`},
	} {
		if got := describeAction(&tc.a, labels); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.a, got, tc.want)
		}
	}
}

func TestRenderBatch(t *testing.T) {
	steps := []browser.BatchStep{
		{Action: browser.Action{Kind: "fill", Ref: "r2", Text: sptr("Ada")}},
		{Action: browser.Action{Kind: "press", Ref: "r2", Key: "Enter"}},
		{Action: browser.Action{Kind: "click", Ref: "r4"}},
	}
	res := &browser.BatchResult{
		ActionResult: browser.ActionResult{RequestID: "b1", Outcome: "failed", Dispatch: "observed", Postcondition: "unverified", Code: wire.CodePolicyDenied, Observation: formObservation()},
		TotalSteps:   3,
		Steps: []browser.StepReport{
			{Index: 0, Status: "attempted", Result: &browser.ActionResult{Outcome: "succeeded", Dispatch: "observed", Postcondition: "passed"}},
			{Index: 1, Status: "attempted", Result: &browser.ActionResult{Outcome: "failed", Dispatch: "notDispatched", Postcondition: "unverified", Code: wire.CodePolicyDenied}},
			{Index: 2, Status: "notRun"},
		},
	}
	got := RenderBatch(res, steps, "L", "")
	for _, w := range []string{
		"batch: failed (dispatch observed, postcondition unverified, code POLICY_DENIED) after 2 of 3 steps\n",
		"  step 1 fill r2 with \"Ada\": succeeded",
		"  step 2 press Enter on r2: failed (dispatch notDispatched, postcondition unverified, code POLICY_DENIED)",
		"  step 3 click r4: not run\n",
		"POLICY_DENIED: the user or policy refused: ask the user.",
		"requestId=b1\n",
		"- button \"Greet\"",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("lacks %q:\n%s", w, got)
		}
	}
	if got := RenderBatch(res, steps, "L", deniedNoElicitation); !strings.Contains(got, "Use browser_act for each step instead.") {
		t.Errorf("a refusal for want of elicitation is not explained:\n%s", got)
	}
}

func TestStepQuestion(t *testing.T) {
	se := &session{pages: make(map[string]*pageInfo)}
	se.remember("L", formObservation())
	shift := true
	a := &approval{sess: se, leaseID: "L", steps: []browser.BatchStep{
		{Action: browser.Action{Kind: "fill", Ref: "r00000000000000a2", Text: sptr("Grace")}},
		{Action: browser.Action{Kind: "press", Ref: "r00000000000000a2", Key: "Tab", Shift: &shift}},
		{Action: browser.Action{Kind: "click", Ref: "rgone"}},
	}}
	for i, want := range []string{
		`Allow the agent to run batch step 1 of 3 (index 0): fill textbox "Your name" with "Grace" on 127.0.0.1:41234 ("DSH demo")?`,
		`Allow the agent to run batch step 2 of 3 (index 1): press Shift+Tab on textbox "Your name" on 127.0.0.1:41234 ("DSH demo")?`,
		`Allow the agent to run batch step 3 of 3 (index 2): click rgone on 127.0.0.1:41234 ("DSH demo")?`,
	} {
		if got := stepQuestion(a, i); got != want {
			t.Errorf("step %d:\n got %s\nwant %s", i, got, want)
		}
	}
	a.leaseID = "unknown"
	if got, want := stepQuestion(a, 2), "Allow the agent to run batch step 3 of 3 (index 2): click rgone?"; got != want {
		t.Errorf("without an observation:\n got %s\nwant %s", got, want)
	}
}

func TestFrameOutline(t *testing.T) {
	inv := &browser.FrameInventory{
		Tab: "inst:7", DocumentEpoch: "8E1F0C2A9B7D4E3F:4C2B1A0F9E8D7C6B",
		Frames: []browser.Frame{
			{ID: "F0", IsMain: true, DocumentEpoch: "8E1F0C2A9B7D4E3F:4C2B1A0F9E8D7C6B", Origin: "http://127.0.0.1:41234", OriginRelation: "same-origin", ContextStatus: "known"},
			{ID: "F1", ParentID: "F0", Origin: "https://ads.example", OriginRelation: "cross-origin", ContextStatus: "unavailable"},
			{ID: "F3", ParentID: "F0", DocumentEpoch: "F3:L3", Origin: "http://127.0.0.1:41234", OriginRelation: "same-origin", ContextStatus: "known"},
			{ID: "F2", ParentID: "F1", OriginRelation: "opaque", ContextStatus: "unavailable"},
		},
	}
	got := FrameOutline(inv, "L1")
	want := `frames of tab=inst:7: 4 frames
leaseId=L1 documentEpoch=8E1F0C2A9B7D4E3F:4C2B1A0F9E8D7C6B
- frame F0 http://127.0.0.1:41234 same-origin main
  - frame F1 https://ads.example cross-origin context unavailable
    - frame F2 (origin unknown) opaque context unavailable
  - frame F3 http://127.0.0.1:41234 same-origin documentEpoch=F3:L3
Cross-origin and opaque frames are painted black in browser_screenshot and cannot be read; a same-origin frame under same-origin frames can be read with browser_observe frame={frameId, documentEpoch}.
`
	if got != want {
		t.Errorf("frames:\n%s\nwant:\n%s", got, want)
	}
}

func TestFrameOutlineOdd(t *testing.T) {
	for _, tc := range []struct {
		name string
		inv  browser.FrameInventory
		want string // the lines after the header
	}{
		{"only the main frame", browser.FrameInventory{Frames: []browser.Frame{
			{ID: "M", IsMain: true, Origin: "https://a.test", OriginRelation: "same-origin", ContextStatus: "known"},
		}}, "- frame M https://a.test same-origin main\n"},
		{"none", browser.FrameInventory{}, "(no frames)\n"},
		{"truncated, parent not listed", browser.FrameInventory{Truncated: true, Frames: []browser.Frame{
			{ID: "M", IsMain: true, Origin: "https://a.test", OriginRelation: "same-origin", ContextStatus: "known"},
			{ID: "C", ParentID: "gone", Origin: "https://b.test", OriginRelation: "cross-origin", ContextStatus: "unavailable"},
		}}, "- frame M https://a.test same-origin main\n- frame C https://b.test cross-origin context unavailable\n(truncated: the page may have more frames than these)\n"},
		{"cycle", browser.FrameInventory{Frames: []browser.Frame{
			{ID: "A", ParentID: "B", OriginRelation: "opaque", ContextStatus: "unavailable"},
			{ID: "B", ParentID: "A", OriginRelation: "opaque", ContextStatus: "unavailable"},
		}}, "- frame A (origin unknown) opaque context unavailable\n  - frame B (origin unknown) opaque context unavailable\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FrameOutline(&tc.inv, "L")
			_, body, _ := strings.Cut(got, "documentEpoch=\n")
			want := tc.want + "Cross-origin and opaque frames are painted black in browser_screenshot and cannot be read; a same-origin frame under same-origin frames can be read with browser_observe frame={frameId, documentEpoch}.\n"
			if body != want {
				t.Errorf("frames:\n%s\nwant after the header:\n%s", got, want)
			}
			if strings.Contains(got[:strings.IndexByte(got, '\n')], "(truncated)") != tc.inv.Truncated {
				t.Errorf("header of %s", got)
			}
		})
	}
}

func TestRenderWindow(t *testing.T) {
	v := "3"
	w := &browser.PageWindow{
		Title: "Big page", URL: "http://127.0.0.1:8080/big", DocumentEpoch: "F:L",
		Nodes: []browser.NodeRef{
			{ID: "rg", Role: "region", Name: "Group 1", Kind: "region"},
			{ID: "rb", Role: "button", Name: "Item 1"},
			{ID: "rt", Role: "textbox", Name: "Count", Value: &v, Editable: true},
		},
		Text:  []string{"Item 1", "Paragraph  1"},
		Scope: browser.Scope{Kind: "document"},
		Page:  browser.PageInfo{Index: 0, Continuation: "pabc"},
	}
	want := `page "Big page" http://127.0.0.1:8080/big  window 1 (more follows)
leaseId=L documentEpoch=F:L
- region "Group 1" [ref=rg]
- button "Item 1" [ref=rb]
- textbox "Count" [ref=rt] value="3"
text:
  Paragraph 1
next: browser_read_page leaseId=L continuation=pabc (single use, within 2 minutes)
`
	if got := RenderWindow(w, "L"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	w.Scope = browser.Scope{Kind: "subtree", RootRef: "rg"}
	w.Page = browser.PageInfo{Index: 2, Incomplete: true}
	got := RenderWindow(w, "L")
	for _, s := range []string{"window 3 of the region rg (the last)", "(incomplete: ", "Paragraph 1"} {
		if !strings.Contains(got, s) {
			t.Errorf("no %q in\n%s", s, got)
		}
	}
	if strings.Contains(got, "next:") {
		t.Errorf("a last window names a next one:\n%s", got)
	}
	// A frame's window says so, and its next call repeats the frame.
	w.Scope = browser.Scope{Kind: "frame", FrameID: "frame-1"}
	w.Page = browser.PageInfo{Index: 0, Continuation: "pnext"}
	got = RenderWindow(w, "L")
	for _, s := range []string{"window 1 in frame frame-1 (more follows)", `next: browser_read_page leaseId=L frame={frameId:"frame-1", documentEpoch:"F:L"} continuation=pnext`} {
		if !strings.Contains(got, s) {
			t.Errorf("no %q in\n%s", s, got)
		}
	}
}

func TestOutlineOfAFrame(t *testing.T) {
	o := &browser.Observation{Title: "Nested", URL: "http://127.0.0.1:8080/nested", DocumentEpoch: "C:L",
		Nodes: []browser.NodeRef{{ID: "r1", Role: "button", Name: "Nested button"}}, Scope: browser.Scope{Kind: "frame", FrameID: "frame-1"}}
	got := Outline(o, "L")
	if !strings.Contains(got, `frame frame-1 (to act on a ref here, pass browser_act frame={frameId:"frame-1", documentEpoch:"C:L"} and this documentEpoch)`) ||
		!strings.Contains(got, `- button "Nested button" [ref=r1]`) {
		t.Errorf("outline of a frame:\n%s", got)
	}
}

// TestWriteFrames: a read frame shows its elements; a same-origin frame
// not read says why (the broker's code, no document yet, or past the
// frames an outline reads, with the call that reads it); another origin's
// frame is one line.
func TestWriteFrames(t *testing.T) {
	same := func(id, epoch string) browser.Frame {
		return browser.Frame{ID: id, Origin: "http://127.0.0.1:8080", OriginRelation: "same-origin", DocumentEpoch: epoch}
	}
	frames := []browser.InlineFrame{
		{Frame: same("frame-1", "A:1"), Observation: &browser.Observation{DocumentEpoch: "A:1", Nodes: []browser.NodeRef{{ID: "r9", Role: "button", Name: "Inner"}}, Text: []string{"Inner", "Inside"}}},
		{Frame: same("frame-2", "B:1"), Code: "STALE_TARGET"},
		{Frame: same("frame-3", "")},
		{Frame: same("frame-4", "D:1")},
		{Frame: browser.Frame{ID: "frame-5", Origin: "https://ads.test", OriginRelation: "cross-origin"}},
	}
	var b strings.Builder
	writeFrames(&b, frames)
	want := `frame frame-1 http://127.0.0.1:8080 (same origin; its refs act directly):
  - button "Inner" [ref=r9]
  text: Inside
frame frame-2 http://127.0.0.1:8080 (same origin, not read: STALE_TARGET)
frame frame-3 http://127.0.0.1:8080 (same origin, not read: no document yet)
frame frame-4 http://127.0.0.1:8080 (same origin, not read: more frames than an outline reads; read it with browser_observe frame={frameId:"frame-4", documentEpoch:"D:1"})
frame frame-5 https://ads.test (cross-origin: another site's content, not readable)
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestActingOn: an action on a ref an inline frame listed acts from that
// frame's observation (and in that frame), one on a page ref from the
// page's, and one naming a frame from that frame's only.
func TestActingOn(t *testing.T) {
	se := &session{pages: map[string]*pageInfo{}}
	page := &browser.Observation{Cursor: "cp", DocumentEpoch: "F:1", Nodes: []browser.NodeRef{{ID: "r1", Role: "button", Name: "Page"}}}
	inner := &browser.Observation{Cursor: "cf", DocumentEpoch: "A:1", Nodes: []browser.NodeRef{{ID: "r2", Role: "button", Name: "Inner"}}}
	se.remember("L", page)
	se.rememberFrames("L", []browser.InlineFrame{{Frame: browser.Frame{ID: "frame-1", DocumentEpoch: "A:1"}, Observation: inner}})
	if before, f := se.actingOn("L", "r2", "F:1", nil); before != inner || f == nil || *frameSelector(f) != (browser.FrameSelector{FrameID: "frame-1", DocumentEpoch: "A:1"}) {
		t.Fatalf("a frame's ref: %v %+v", before, f)
	}
	if before, f := se.actingOn("L", "r1", "F:1", nil); before != page || f != nil {
		t.Fatalf("a page's ref: %v %+v", before, f)
	}
	if before, f := se.actingOn("L", "r2", "F:0", nil); before != page || f != nil {
		t.Fatalf("a ref of another page's document: %v %+v", before, f)
	}
	if before, f := se.actingOn("L", "r7", "A:1", &browser.FrameSelector{FrameID: "frame-1", DocumentEpoch: "A:1"}); before != inner || f == nil {
		t.Fatalf("a named frame: %v %+v", before, f)
	}
	if before, f := se.actingOn("L", "r7", "A:2", &browser.FrameSelector{FrameID: "frame-1", DocumentEpoch: "A:2"}); before != nil || f != nil {
		t.Fatalf("a named frame's other document: %v %+v", before, f)
	}
	// After an action in the frame, its observation is the frame's next baseline.
	after := &browser.Observation{Cursor: "cf2", DocumentEpoch: "A:1", Nodes: inner.Nodes}
	se.rememberFrame("L", "frame-1", after)
	if before, _ := se.actingOn("L", "r2", "F:1", nil); before != after {
		t.Fatalf("after an action in the frame: %v", before)
	}
}

// TestRenderChangeAtTheBound: exactly maxChangeLines changes are all
// listed, with nothing said about more.
func TestRenderChangeAtTheBound(t *testing.T) {
	before := formObservation()
	d := browser.ObservationDelta{Cursor: "c2", BaseCursor: before.Cursor, Title: before.Title, Text: &browser.TextSplice{Start: 6}}
	for i := range maxChangeLines {
		d.Text.Insert = append(d.Text.Insert, fmt.Sprint("line ", i))
	}
	res := browser.ActionResult{RequestID: "q", Outcome: "unknown", Dispatch: "observed", Postcondition: "unverified", Change: &d}
	got := RenderAction(&res, click0, "L", before)
	if !strings.Contains(got, fmt.Sprintf("+ text: line %d\n", maxChangeLines-1)) || strings.Contains(got, "more changes") {
		t.Fatalf("at the bound:\n%s", got)
	}
}
