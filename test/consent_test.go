package test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// openPopup opens the extension's popup in a window of its own, as the
// toolbar button does, and returns it. It speaks of the active tab of the
// last focused normal window.
func openPopup(t *testing.T, s *stack.Stack) target.ID {
	t.Helper()
	worker := s.Browser.ServiceWorker(t, install.PinnedExtensionID)
	chromium.Eval[any](t, s.Browser, worker, "chrome.windows.create({url: chrome.runtime.getURL('popup.html'), type: 'popup', width: 320, height: 320}).then(() => 1)")
	return s.Browser.WaitTarget(t, func(i *target.Info) bool {
		return i.Type == "page" && strings.Contains(i.URL, install.PinnedExtensionID+"/popup.html")
	}, 30*time.Second).TargetID
}

// approvalOpen reports whether an approval window is open.
func approvalOpen(t *testing.T, s *stack.Stack) bool {
	for _, i := range s.Browser.Targets(t) {
		if i.Type == "page" && strings.Contains(i.URL, install.PinnedExtensionID+"/approve.html") {
			return true
		}
	}
	return false
}

// TestE2EPriorConsent: the owner allows a tab from the popup; a reference
// client's claim, with its 10-second deadline, is then granted at once,
// exact-origin. Stop forgets the consent, so does Forget in the owner's
// console, and so does leaving the origin.
func TestE2EPriorConsent(t *testing.T) {
	t.Parallel()
	s := stack.Start(t)
	tab, tgt := s.Tab(t, s.Pages.URL("/counter"))
	popup := openPopup(t, s)
	waitJS(t, s, popup, `document.getElementById('here-origin').textContent !== ''`, "the popup's origin")
	if got := s.Browser.Text(t, popup, "#here-origin"); got != s.Pages.Origin() {
		t.Fatalf("the popup speaks of %q, want %s", got, s.Pages.Origin())
	}
	allow := func() {
		t.Helper()
		s.Browser.Click(t, popup, "#allow")
		for i := 0; !chromium.Eval[bool](t, s.Browser, popup, "!document.getElementById('allowed').hidden"); i++ {
			if i > 100 {
				t.Fatal("the popup never said the tab is allowed")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	claim := func(deadline time.Duration) (browser.LeaseResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		raw, err := s.Client.Call(ctx, "browser.claim", map[string]any{"sessionId": "s", "instanceId": s.Instance, "tab": tab})
		var l browser.LeaseResult
		if err == nil {
			err = json.Unmarshal(raw, &l)
		}
		return l, err
	}
	// asked claims in the background and answers the approval window that
	// must open with Deny.
	asked := func(what string) {
		t.Helper()
		errc := make(chan error, 1)
		go func() { _, err := claim(40 * time.Second); errc <- err }()
		s.Approve(t, "deny")
		if err := <-errc; !errors.Is(err, wire.Err(wire.CodePolicyDenied)) {
			t.Fatalf("%s: the claim answered %v, want POLICY_DENIED after Deny", what, err)
		}
	}

	allow()
	l, err := claim(10 * time.Second) // the reference client's deadline
	if err != nil {
		t.Fatalf("a claim of an allowed tab: %v", err)
	}
	if l.Scope != "origin" || l.Origin != s.Pages.Origin() || approvalOpen(t, s) {
		t.Fatalf("lease %+v (approval window open: %v), want an exact-origin lease without asking", l, approvalOpen(t, s))
	}
	p := &page{t: t, s: s, target: tgt, lease: l}
	p.observe()
	succeeded(t, "click under prior consent", p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Add one"),
		"expected": map[string]any{"kind": "text", "text": "Clicks: 1"}}), "observed")

	// Stop ends the lease and forgets the consent.
	s.Browser.Click(t, popup, "#stop")
	s.WaitRevoked(t, l.ID)
	asked("after Stop")

	// Leaving the origin forgets it too, even when the tab comes back.
	allow()
	s.Browser.Navigate(t, tgt, s.Pages.Other().URL("/counter"))
	s.Browser.Navigate(t, tgt, s.Pages.URL("/counter"))
	asked("after leaving the origin")

	// The owner's console lists a consent; Forget there takes it back. (A
	// fresh popup: the open one still shows what it showed.)
	s.Browser.CloseTab(t, popup)
	popup = openPopup(t, s)
	allow()
	console := openConsole(t, s)
	waitJS(t, s, console, `document.querySelectorAll('#consents > li').length === 1 && document.getElementById('consents').textContent.includes(`+jsString(s.Pages.Origin())+`)`,
		"the consent listed in the console")
	assertNamedControls(t, s, console)
	s.Browser.Click(t, console, "#consents > li button")
	waitJS(t, s, console, `document.querySelectorAll('#consents > li').length === 0`, "the consent gone from the console")
	asked("after Forget in the console")
}
