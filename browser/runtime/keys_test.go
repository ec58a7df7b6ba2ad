package runtime

import (
	"slices"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

// TestChordPolicy: the browser's own shortcuts, which act outside the tab,
// are refused or guarded; an application's are sent as they are.
func TestChordPolicy(t *testing.T) {
	for _, tc := range []struct {
		key             string
		mods            []string
		denied, guarded bool
	}{
		{"w", []string{"Control"}, true, false},
		{"W", []string{"Control", "Shift"}, true, false},
		{"t", []string{"Meta"}, true, false},
		{"T", []string{"Control", "Shift"}, true, false},
		{"n", []string{"Control", "Shift"}, true, false},
		{"q", []string{"Control"}, true, false},
		{"l", []string{"Control"}, true, false},
		{"Tab", []string{"Control"}, true, false},
		{"Tab", []string{"Control", "Shift"}, true, false},
		{"PageDown", []string{"Control"}, true, false},
		{"PageUp", []string{"Meta"}, true, false},
		{"j", []string{"Control"}, false, true},
		{"h", []string{"Control"}, false, true},
		{"s", []string{"Control"}, false, true},
		{"1", []string{"Control"}, false, true},
		{"=", []string{"Control"}, false, true},
		{"I", []string{"Control", "Shift"}, false, true},
		{"Delete", []string{"Control", "Shift"}, false, true},
		{"d", []string{"Alt"}, false, true},
		{"ArrowLeft", []string{"Alt"}, false, true},
		{"Escape", []string{"Shift"}, false, true},
		// The applications' own: search, replace, go to line, undo, select all,
		// bold, a character typed.
		{"f", []string{"Control"}, false, false},
		{"g", []string{"Control"}, false, false},
		{"z", []string{"Control"}, false, false},
		{"Z", []string{"Control", "Shift"}, false, false},
		{"a", []string{"Control"}, false, false},
		{"b", []string{"Control"}, false, false},
		{"i", []string{"Control"}, false, false},
		{"o", nil, false, false},
		{"w", nil, false, false},
		{"W", []string{"Shift"}, false, false},
		{"ArrowLeft", []string{"Shift"}, false, false},
		{"ArrowLeft", []string{"Alt", "Control"}, false, false},
		{"Enter", []string{"Control"}, false, false},
		{"Home", []string{"Control"}, false, false},
	} {
		denied, guarded := chordPolicy(tc.key, tc.mods)
		if denied != tc.denied || guarded != tc.guarded {
			t.Errorf("%v+%s: denied %v guarded %v, want %v %v", tc.mods, tc.key, denied, guarded, tc.denied, tc.guarded)
		}
	}
}

// TestChord: a chord goes to the focused target with its modifiers (none
// for a plain character), a guard when the browser would act on it, and a
// shortcut of the browser's is refused before any input.
func TestChord(t *testing.T) {
	t.Parallel()
	a := withHit(t, func(hitRequest) hitFacts { return hitFacts{Relation: "target"} })
	box := a.ref("textbox", "Your name")
	chord := func(id, key string, mods ...string) browser.ActionResult {
		if mods == nil {
			mods = []string{}
		}
		return a.act("s", a.request(id, map[string]any{"kind": "chord", "ref": box, "key": key, "modifiers": mods}))
	}
	for _, tc := range []struct {
		key   string
		mods  []string
		guard bool
	}{
		{"f", []string{"Control"}, false},
		{"o", []string{}, false},
		{"h", []string{"Control"}, true},
		{"ArrowUp", []string{"Alt", "Shift"}, false},
	} {
		res := chord("k-"+tc.key, tc.key, tc.mods...)
		if res.Dispatch != "observed" || res.Outcome != "unknown" {
			t.Fatalf("%v+%s: %+v", tc.mods, tc.key, res)
		}
		c := lastCommand(t, a.p, browser.ProviderInputKey)
		if c.Key != tc.key || c.Modifiers == nil || !slices.Equal(c.Modifiers, tc.mods) || c.Guard != tc.guard || c.Shift || c.Target.BackendNodeID != 3 {
			t.Fatalf("%v+%s sent %+v", tc.mods, tc.key, c)
		}
	}
	keys := a.p.count(browser.ProviderInputKey)
	if res := chord("close", "w", "Control"); res.Code != wire.CodePolicyDenied || res.Dispatch != "notDispatched" {
		t.Fatalf("Control+W: %+v", res)
	}
	if res := chord("tabs", "Tab", "Control", "Shift"); res.Code != wire.CodePolicyDenied {
		t.Fatalf("Control+Shift+Tab: %+v", res)
	}
	if a.p.count(browser.ProviderInputKey) != keys {
		t.Fatal("a browser shortcut was sent")
	}
	// A plain character is text typed: never into a password field.
	a.p.on(browser.ProviderDOMRead, func(params any) (any, error) {
		f := a.p.page.facts(params.(*requestParams[domRequest]).Request.BackendNodeID)
		f.Password = true
		return f, nil
	})
	if res := chord("secret", "x"); res.Code != wire.CodeUnsupportedCapability || a.p.count(browser.ProviderInputKey) != keys {
		t.Fatalf("a key into a password field: %+v", res)
	}
}
