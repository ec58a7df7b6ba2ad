package test

import (
	"errors"
	"net"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// TestE2ENavigateTabScope: a tab-scoped lease goes to a URL of its own
// origin or of another, keeps its authority, and waits for the new
// document; the old refs are stale.
func TestE2ENavigateTabScope(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/nav")
	navigate := func(url string, extra ...any) browser.ActionResult {
		return p.act(map[string]any{"kind": "navigate", "url": url}, extra...)
	}
	oldRef := p.ref("link", "Counter on this origin")

	// Same origin: without an expectation, the new document is what is
	// verified; the observation shows the URL as the browser writes it.
	r := navigate(s.Pages.URL("/counter"))
	succeeded(t, "navigate to the counter", r, "observed")
	if r.Observation.URL != s.Pages.URL("/counter") || r.Observation.DocumentEpoch == p.obs.DocumentEpoch {
		t.Fatalf("observation after navigate: %s %s", r.Observation.URL, r.Observation.DocumentEpoch)
	}
	if got := eval[string](p, "location.href"); got != s.Pages.URL("/counter") {
		t.Fatalf("the tab shows %s", got)
	}
	stale := p.act(map[string]any{"kind": "click", "ref": oldRef})
	refused(t, "a ref of the old document", stale, wire.CodeStaleTarget)
	p.obs = *r.Observation
	succeeded(t, "click on the new page", p.act(map[string]any{"kind": "click", "ref": p.ref("button", "Add one"),
		"expected": map[string]any{"kind": "text", "text": "Clicks: 1"}}), "observed")

	// Another origin: a tab lease follows, with a text expectation.
	r = navigate(s.Pages.Other().URL("/form"), "timeoutMs", 10000)
	p.obs = *r.Observation
	succeeded(t, "navigate to the other origin", r, "observed")
	r = p.act(map[string]any{"kind": "navigate", "url": s.Pages.URL("/form"), "expected": map[string]any{"kind": "text", "text": "DSH demo"}})
	succeeded(t, "navigate back, expecting text", r, "observed")
	p.obs = *r.Observation
	if _, err := s.Call(t, "browser.validateLease", map[string]any{"sessionId": "s", "leaseId": p.lease.ID}); err != nil {
		t.Fatalf("the lease after crossing origins: %v", err)
	}

	// Without an expectation, the page loaded wherever it landed: a server's
	// redirect, a router that adds "#/" as the page starts.
	r = navigate(s.Pages.URL("/moved"))
	succeeded(t, "navigate through a redirect", r, "observed")
	if r.Observation.URL != s.Pages.URL("/counter") {
		t.Fatalf("a redirect landed at %s", r.Observation.URL)
	}
	p.obs = *r.Observation
	r = navigate(s.Pages.URL("/router"))
	succeeded(t, "navigate to a page whose router adds #/", r, "observed")
	if r.Observation.URL != s.Pages.URL("/router#/") {
		t.Fatalf("the router's page landed at %s", r.Observation.URL)
	}
	p.obs = *r.Observation

	// A fragment is part of the URL.
	r = navigate(s.Pages.URL("/form#greet-form"))
	succeeded(t, "navigate to a fragment", r, "observed")
	if r.Observation.URL != s.Pages.URL("/form#greet-form") {
		t.Fatalf("url %s", r.Observation.URL)
	}
	p.obs = *r.Observation
	// A URL expectation that is not met: failed.
	r = p.act(map[string]any{"kind": "navigate", "url": s.Pages.URL("/counter"), "expected": map[string]any{"kind": "url", "url": s.Pages.URL("/keys")}}, "timeoutMs", 1500)
	if r.Outcome != "failed" || r.Postcondition != "failed" || r.Dispatch != "observed" {
		t.Fatalf("a URL that never comes: %+v", r)
	}
	p.observe()

	// Refused before anything is sent: credentials, other schemes.
	for _, url := range []string{"http://user:pw@127.0.0.1/", "file:///etc/passwd", "javascript:alert(1)", "chrome://settings", "data:text/html,x"} {
		refused(t, "navigate to "+url, navigate(url), wire.CodePolicyDenied)
	}
	if got := eval[string](p, "location.href"); got != s.Pages.URL("/counter") {
		t.Fatalf("a refused navigation moved the tab to %s", got)
	}
	// A URL nothing answers: NAVIGATION_FAILED after the request was sent,
	// and the lease stands.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/"
	l.Close()
	r = navigate(dead)
	if r.Outcome != "failed" || r.Dispatch != "dispatched" || r.Code != wire.CodeNavigationFailed {
		t.Fatalf("navigate to a closed port: %+v", r)
	}
	if _, err := s.Call(t, "browser.validateLease", map[string]any{"sessionId": "s", "leaseId": p.lease.ID}); err != nil {
		t.Fatalf("the lease after a failed navigation: %v", err)
	}
}

// TestE2ENavigateOriginScope: an origin-scoped lease (restricted mode)
// navigates on its origin only.
func TestE2ENavigateOriginScope(t *testing.T) {
	t.Parallel()
	s := stack.Start(t)
	tab, tgt := s.Tab(t, s.Pages.URL("/nav"))
	done := make(chan browser.LeaseResult, 1)
	go func() { done <- s.Claim(t, "s", tab) }()
	s.Approve(t, "allow")
	p := &page{t: t, s: s, target: tgt, lease: <-done}
	p.observe()
	refused(t, "navigate to another origin", p.act(map[string]any{"kind": "navigate", "url": s.Pages.Other().URL("/form")}), wire.CodePolicyDenied)
	r := p.act(map[string]any{"kind": "navigate", "url": s.Pages.URL("/form")})
	succeeded(t, "navigate on the origin", r, "observed")
	if got := eval[string](p, "location.href"); got != s.Pages.URL("/form") {
		t.Fatalf("the tab shows %s", got)
	}
	// A link to the same origin, clicked with a URL expectation.
	p.obs = *r.Observation
	r = p.act(map[string]any{"kind": "click", "ref": p.ref("link", "Go to the counter"), "expected": map[string]any{"kind": "url", "url": s.Pages.URL("/counter")}})
	succeeded(t, "click a link expecting its URL", r, "observed")
	if _, err := s.Call(t, "browser.validateLease", map[string]any{"sessionId": "s", "leaseId": p.lease.ID}); errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
		t.Fatal("the lease ended on its own origin")
	}
}
