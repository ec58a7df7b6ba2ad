package mcpserver

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
)

func TestCheckAction(t *testing.T) {
	shift := true
	for _, tc := range []struct {
		name string
		a    browser.Action
		err  string // "" for valid
	}{
		{"click", browser.Action{Kind: "click", Ref: "r1"}, ""},
		{"click with text", browser.Action{Kind: "click", Ref: "r1", Text: sptr("x")}, "click takes ref, not text"},
		{"fill", browser.Action{Kind: "fill", Ref: "r1", Text: sptr("")}, ""},
		{"fill without text", browser.Action{Kind: "fill", Ref: "r1"}, "fill needs action.text"},
		{"append with key", browser.Action{Kind: "append", Ref: "r1", Text: sptr("x"), Key: "Enter"}, "append takes ref, text, not key"},
		{"press", browser.Action{Kind: "press", Ref: "r1", Key: "Enter", Shift: &shift}, ""},
		{"press unknown key", browser.Action{Kind: "press", Ref: "r1", Key: "F5"}, "press needs action.key, one of Enter, Tab"},
		{"press with text", browser.Action{Kind: "press", Ref: "r1", Key: "Enter", Text: sptr("x")}, "press takes ref, key, shift, not text"},
		{"check", browser.Action{Kind: "check", Ref: "r1", Checked: &shift}, ""},
		{"check without checked", browser.Action{Kind: "check", Ref: "r1"}, "check needs action.checked"},
		{"select", browser.Action{Kind: "select", Ref: "r1", Option: sptr("Blue")}, ""},
		{"select without option", browser.Action{Kind: "select", Ref: "r1"}, "select needs action.option"},
		{"scroll the page", browser.Action{Kind: "scroll", DeltaX: iptr(0), DeltaY: iptr(400)}, ""},
		{"scroll by nothing", browser.Action{Kind: "scroll", DeltaX: iptr(0), DeltaY: iptr(0)}, "deltaX or deltaY other than 0"},
		{"scroll without deltaY", browser.Action{Kind: "scroll", DeltaX: iptr(1)}, "scroll needs action.deltaY"},
		{"wheel without ref", browser.Action{Kind: "wheel", DeltaX: iptr(0), DeltaY: iptr(1)}, "action.ref is required"},
		{"navigate", browser.Action{Kind: "navigate", URL: "https://a.test/"}, ""},
		{"navigate with ref", browser.Action{Kind: "navigate", Ref: "r1", URL: "https://a.test/"}, "navigate takes url, not ref"},
		{"navigate expecting a value", browser.Action{Kind: "navigate", URL: "https://a.test/", Expected: &browser.Expected{Value: sptr("x")}}, "navigate cannot be checked by value"},
		{"unknown kind", browser.Action{Kind: "doubleclick", Ref: "r1"}, "action.kind must be one of click, fill, type, append, press, check, select, scroll, wheel, navigate, dblclick, hover, chord, drag, clickAt"},
		{"select by value", browser.Action{Kind: "select", Ref: "r1", Value: sptr("")}, ""},
		{"select by both", browser.Action{Kind: "select", Ref: "r1", Option: sptr("Blue"), Value: sptr("b")}, "not both"},
		{"dblclick", browser.Action{Kind: "dblclick", Ref: "r1"}, ""},
		{"hover with text", browser.Action{Kind: "hover", Ref: "r1", Text: sptr("x")}, "hover takes ref, not text"},
		{"chord", browser.Action{Kind: "chord", Ref: "r1", Key: "f", Modifiers: []string{"Control"}}, ""},
		{"chord of a character alone", browser.Action{Kind: "chord", Ref: "r1", Key: "o"}, ""},
		{"chord of a named key alone", browser.Action{Kind: "chord", Ref: "r1", Key: "Enter"}, "needs modifiers (or use press)"},
		{"chord of two characters", browser.Action{Kind: "chord", Ref: "r1", Key: "ab", Modifiers: []string{"Control"}}, "or one character"},
		{"chord with shift", browser.Action{Kind: "chord", Ref: "r1", Key: "a", Shift: &shift}, "chord takes ref, key, modifiers, not shift"},
		{"drag onto", browser.Action{Kind: "drag", Ref: "r1", ToRef: "r2"}, ""},
		{"drag by", browser.Action{Kind: "drag", Ref: "r1", DeltaX: iptr(0), DeltaY: iptr(-5)}, ""},
		{"drag nowhere", browser.Action{Kind: "drag", Ref: "r1"}, "drag needs action.toRef"},
		{"drag both", browser.Action{Kind: "drag", Ref: "r1", ToRef: "r2", DeltaX: iptr(1), DeltaY: iptr(1)}, "not both"},
		{"drag by nothing", browser.Action{Kind: "drag", Ref: "r1", DeltaX: iptr(0), DeltaY: iptr(0)}, "other than 0"},
		{"clickAt", browser.Action{Kind: "clickAt", Ref: "r1", X: iptr(3), Y: iptr(4)}, ""},
		{"clickAt without y", browser.Action{Kind: "clickAt", Ref: "r1", X: iptr(3)}, "clickAt needs action.y"},
		{"no ref", browser.Action{Kind: "click"}, "action.ref is required"},
		{"expected without kind", browser.Action{Kind: "click", Ref: "r1", Expected: &browser.Expected{Text: "Clicks: 1"}}, ""},
		{"expected blank", browser.Action{Kind: "click", Ref: "r1", Expected: &browser.Expected{Kind: "text", Text: "  "}}, "non-empty text"},
		{"expected state", browser.Action{Kind: "click", Ref: "r1", Expected: &browser.Expected{Ref: "r2", State: "hidden"}}, ""},
		{"expected state unknown", browser.Action{Kind: "click", Ref: "r1", Expected: &browser.Expected{Ref: "r2", State: "gone"}}, "needs ref and state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkAction(&tc.a)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v, want an error with %q", err, tc.err)
			}
		})
	}
	for want, e := range map[string]*browser.Expected{
		"text": {Text: "x"}, "value": {Value: sptr("")}, "url": {URL: "https://a.test/"}, "state": {Ref: "r1", State: "visible"},
	} {
		a := browser.Action{Kind: "click", Ref: "r1", Expected: e}
		checkAction(&a)
		if a.Expected.Kind != want {
			t.Errorf("expected.kind of %+v becomes %q, want %s", e, a.Expected.Kind, want)
		}
	}
}

// TestSchemas checks the tools' input schemas: required and optional
// arguments as the reference names them, and the enums of actions.
func TestSchemas(t *testing.T) {
	cs := connectNoBroker(t, nil)
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]map[string]any{}
	readOnly := map[string]bool{}
	for _, tool := range list.Tools {
		readOnly[tool.Name] = tool.Annotations != nil && tool.Annotations.ReadOnlyHint
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(raw, &m)
		tools[tool.Name] = m
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	if got := slices.Sorted(maps.Keys(tools)); !slices.Equal(got, []string{"app_list", "app_open", "app_revert", "app_save_version", "app_source", "app_versions", "app_write", "browser_act", "browser_batch", "browser_claim", "browser_frames", "browser_handoff", "browser_list", "browser_navigate", "browser_observe", "browser_read_page", "browser_screenshot", "terminal_interrupt", "terminal_list", "terminal_proposal_state", "terminal_release_control", "terminal_request_control", "terminal_send_key", "terminal_snapshot", "terminal_type"}) {
		t.Errorf("tools %v", got)
	}
	for name, want := range map[string]struct{ required, optional []string }{
		"browser_list":       {nil, []string{"instanceId"}},
		"browser_claim":      {[]string{"instanceId", "tab"}, nil},
		"browser_observe":    {[]string{"leaseId"}, []string{"frame", "query", "rootRef"}},
		"browser_navigate":   {[]string{"leaseId", "url"}, []string{"expectedText", "requestId", "timeoutMs"}},
		"browser_act":        {[]string{"leaseId", "documentEpoch", "action"}, []string{"frame", "requestId", "timeoutMs"}},
		"browser_batch":      {[]string{"leaseId", "documentEpoch", "steps"}, []string{"requestId", "timeoutMs"}},
		"browser_frames":     {[]string{"leaseId"}, nil},
		"browser_read_page":  {[]string{"leaseId"}, []string{"continuation", "frame", "rootRef"}},
		"browser_screenshot": {[]string{"leaseId"}, nil},
		"browser_handoff":    {[]string{"leaseId"}, nil},
		"app_list":           {nil, nil},
		"app_write":          {[]string{"name", "html"}, []string{"description", "iconEmoji", "runtimeContract"}},
		"app_save_version":   {[]string{"app", "html"}, []string{"note", "runtimeContract"}},
		"app_source":         {[]string{"app"}, []string{"version"}},
		"app_open":           {[]string{"app"}, nil},
		"app_versions":       {[]string{"app"}, nil},
		"app_revert":         {[]string{"app", "version"}, nil},
	} {
		m := tools[name]
		props, _ := m["properties"].(map[string]any)
		if got := slices.Sorted(maps.Keys(props)); !slices.Equal(got, slices.Sorted(slices.Values(append(want.required, want.optional...)))) {
			t.Errorf("%s: properties %v, want %v + %v", name, got, want.required, want.optional)
		}
		if got := strs(m["required"]); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want.required))) {
			t.Errorf("%s: required %v, want %v", name, got, want.required)
		}
	}
	for name, want := range map[string]bool{"browser_list": true, "browser_observe": true, "browser_frames": true, "browser_read_page": true, "browser_screenshot": true, "browser_act": false, "browser_batch": false} {
		if readOnly[name] != want {
			t.Errorf("%s: readOnlyHint %v, want %v", name, readOnly[name], want)
		}
	}
	action := path(t, tools["browser_act"], "properties", "action")
	if got := strs(path(t, action, "properties", "kind")["enum"]); !slices.Equal(got, actionKinds) {
		t.Errorf("action kinds %v", got)
	}
	if got := path(t, action, "properties", "key")["pattern"]; got != keyPattern {
		t.Errorf("key pattern %v", got)
	}
	if got := strs(path(t, action, "properties", "modifiers", "items")["enum"]); !slices.Equal(got, browser.Modifiers) {
		t.Errorf("modifiers %v", got)
	}
	if got := strs(action["required"]); !slices.Equal(got, []string{"kind"}) {
		t.Errorf("action required %v", got)
	}
	if got := path(t, action, "properties", "text")["type"]; got != "string" {
		t.Errorf("action.text type %v, want string (not nullable)", got)
	}
	steps := path(t, tools["browser_batch"], "properties", "steps")
	if steps["minItems"] != 1.0 || steps["maxItems"] != 8.0 {
		t.Errorf("steps bounds %v..%v", steps["minItems"], steps["maxItems"])
	}
	stepAction := path(t, steps, "items", "properties", "action")
	if got := strs(path(t, stepAction, "properties", "kind")["enum"]); !slices.Equal(got, actionKinds) {
		t.Errorf("batch action kinds %v", got)
	}
	q := path(t, tools["browser_observe"], "properties", "query")
	if got := strs(q["required"]); !slices.Equal(got, []string{"name"}) {
		t.Errorf("query required %v", got)
	}
	// The schemas resolve, and a press with an unknown key is refused.
	rs, err := inputSchema[ActInput](annotateAct).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []map[string]any{
		{"kind": "press", "ref": "r1", "key": "F5"},
		{"kind": "chord", "ref": "r1", "key": "a", "modifiers": []any{"Ctrl"}},
		{"kind": "chord", "ref": "r1", "key": "a", "modifiers": []any{"Alt", "Alt"}},
		{"kind": "clickAt", "ref": "r1", "x": -1, "y": 0},
	} {
		if rs.Validate(map[string]any{"leaseId": "L", "documentEpoch": "E", "action": bad}) == nil {
			t.Errorf("%v validates", bad)
		}
	}
	for _, ok := range []map[string]any{
		{"kind": "chord", "ref": "r1", "key": "s", "modifiers": []any{"Control", "Shift"}},
		{"kind": "chord", "ref": "r1", "key": "ArrowUp", "modifiers": []any{"Alt"}},
		{"kind": "drag", "ref": "r1", "toRef": "r2"},
		{"kind": "clickAt", "ref": "r1", "x": 0, "y": 10000},
		{"kind": "select", "ref": "r1", "value": "de"},
	} {
		if err := rs.Validate(map[string]any{"leaseId": "L", "documentEpoch": "E", "action": ok}); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	good := map[string]any{"leaseId": "L", "documentEpoch": "E", "action": map[string]any{"kind": "click", "ref": "r1", "expected": map[string]any{"text": "Clicks: 1"}}}
	if err := rs.Validate(good); err != nil {
		t.Errorf("a click with an expectation: %v", err)
	}
}

func path(t *testing.T, m map[string]any, keys ...string) map[string]any {
	t.Helper()
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("schema has no %s in %v", k, m)
		}
		m = next
	}
	return m
}

func strs(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
