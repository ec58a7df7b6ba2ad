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

type ClaimParams struct {
	SessionID  string `json:"sessionId"`
	InstanceID string `json:"instanceId"`
	Tab        string `json:"tab"`
}

type ReleaseParams struct {
	SessionID string `json:"sessionId"`
	LeaseID   string `json:"leaseId"`
}

type SessionParams struct {
	SessionID string `json:"sessionId"`
}

type LeaseParams struct {
	SessionID string `json:"sessionId"`
	LeaseID   string `json:"leaseId"`
}

// TabSummary is one tab as browser.tabs reports it.
type TabSummary struct {
	ID         string `json:"id"`
	InstanceID string `json:"instanceId"`
	URL        string `json:"url"`
	Title      string `json:"title"`
}

type TabsParams struct {
	SessionID  string `json:"sessionId"`
	InstanceID string `json:"instanceId"`
}
