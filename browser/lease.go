package browser

import "time"

// ApprovalTimeout bounds a claim the owner approves in the browser (the
// extension's window waits 60 s): a client's deadline for browser.claim in
// restricted mode should be at least this.
const ApprovalTimeout = 65 * time.Second

// LeaseResult is the value of browser.claim.
type LeaseResult struct {
	ID         string `json:"id"`
	Owner      string `json:"owner"`
	Tab        string `json:"tab"`
	InstanceID string `json:"instanceId"`
	Token      string `json:"token"`
	Origin     string `json:"origin"`
	Scope      string `json:"scope"`
	ExpiresAt  int64  `json:"expiresAt"`
}

// ClaimParams is the params of browser.claim.
type ClaimParams struct {
	SessionID  string `json:"sessionId" len:"1,256"`
	InstanceID string `json:"instanceId" len:"1,256"`
	Tab        string `json:"tab" len:"1,256"`
}

// ReleaseParams is the params of browser.release.
type ReleaseParams struct {
	SessionID string `json:"sessionId" len:"1,256"`
	LeaseID   string `json:"leaseId" len:"1,256"`
}

// SessionParams is the params of browser.releaseSession.
type SessionParams struct {
	SessionID string `json:"sessionId" len:"1,256"`
}

// LeaseParams is the params of the methods that name only a lease
// (browser.frames, browser.capture, browser.validateLease).
type LeaseParams struct {
	SessionID string `json:"sessionId" len:"1,256"`
	LeaseID   string `json:"leaseId" len:"1,256"`
}

// TabSummary is one tab as browser.tabs reports it.
type TabSummary struct {
	ID         string `json:"id"`
	InstanceID string `json:"instanceId"`
	URL        string `json:"url"`
	Title      string `json:"title"`
}

// TabsParams is the params of browser.tabs.
type TabsParams struct {
	SessionID  string `json:"sessionId" len:"1,256"`
	InstanceID string `json:"instanceId" len:"1,256"`
}
