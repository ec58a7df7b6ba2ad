package runtime

import (
	"slices"
	"strings"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

// Chords the browser acts on itself, outside the leased tab. Chromium 156
// acts on a key event sent through a DevTools session of its own as on a
// keyboard's: its reserved shortcuts never reach the page and act at once
// (Control+W closed the tab, Control+T and Control+N opened one), the
// others reach the page first and act unless it prevents their default
// (Control+J opened the downloads page). Sent through the extension's
// chrome.debugger none of them acted in the same build (test/chords_test.go
// says so), which nothing promises of other builds or headed windows: the
// broker refuses the first and guards the others all the same.
var (
	// reservedKeys, with Control or Meta, close, open or switch tabs and
	// windows, quit, or focus the address bar (which then takes the keys
	// meant for the page): refused POLICY_DENIED.
	reservedKeys = []string{"w", "t", "n", "q", "l", "Tab", "PageUp", "PageDown"}
	// browserKeys, with Control or Meta, open the history, downloads,
	// bookmarks, source, print, save and open dialogs, the address bar's
	// search, another tab by its number, or change the origin's zoom;
	// browserShiftKeys do the like with Shift too (bookmarks, devtools,
	// profiles, tab search, clearing data); browserAltKeys, with Alt alone,
	// focus the address bar or the menu, or navigate the tab's history
	// (Alt+Home). Sent with a guard: the page gets them, and the extension
	// prevents the browser's default when the page leaves it.
	browserKeys      = []string{"j", "h", "d", "u", "o", "p", "s", "e", "k", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "=", "+", "-"}
	browserShiftKeys = []string{"a", "b", "c", "i", "m", "o", "Delete"}
	browserAltKeys   = []string{"d", "e", "f", "Home", "ArrowLeft", "ArrowRight"}
)

// chordPolicy says whether a chord is refused (denied) or sent with a guard
// against the browser's own default (guarded).
func chordPolicy(key string, modifiers []string) (denied, guarded bool) {
	has := func(m string) bool { return slices.Contains(modifiers, m) }
	ctrl, shift, alt := has("Control") || has("Meta"), has("Shift"), has("Alt")
	k := key
	if len(k) == 1 {
		k = strings.ToLower(k)
	}
	switch {
	case ctrl && slices.Contains(reservedKeys, k):
		return true, false
	case ctrl && slices.Contains(browserKeys, k), ctrl && shift && slices.Contains(browserShiftKeys, k),
		alt && !ctrl && slices.Contains(browserAltKeys, k), shift && !ctrl && !alt && k == "Escape": // Shift+Escape: the task manager
		return false, true
	}
	return false, false
}

// chord presses one key, named or a single character, with the modifiers
// held, on the focused target. Chords the browser reserves for itself are
// POLICY_DENIED; those it acts on unless the page handles them go with a
// guard. Never on a password field (UNSUPPORTED_CAPABILITY): a character
// key types.
func (a *action) chord() *browser.ActionResult {
	denied, guarded := chordPolicy(a.a.Key, a.a.Modifiers)
	if denied {
		return a.refuse(wire.Err(wire.CodePolicyDenied))
	}
	f, err := a.ready()
	if err != nil {
		return a.refuse(err)
	}
	if f.Password {
		return a.refuse(wire.Err(wire.CodeUnsupportedCapability))
	}
	cmd := a.command()
	cmd.Key, cmd.Modifiers, cmd.Guard = a.a.Key, a.a.Modifiers, guarded
	if cmd.Modifiers == nil {
		cmd.Modifiers = []string{}
	}
	if res := a.send(browser.ProviderInputKey, cmd); res != nil {
		return res
	}
	return a.verify(nil)
}
