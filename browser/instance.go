package browser

import "time"

// Instance is one connected browser, as browser.instances reports it.
type Instance struct {
	ID           string          `json:"id"`
	Family       string          `json:"family"`
	Brand        string          `json:"brand"`
	Version      string          `json:"version"`
	ProfileLabel string          `json:"profileLabel"`
	Capabilities map[string]bool `json:"capabilities"`
}

// Features names what the broker can do with an instance, in the
// reference's vocabulary (Instance.Capabilities). A feature turns true in
// the change that implements it end to end.
var Features = []string{
	"ax", "axSubtree", "dom", "screenshot", "keyboard", "keyboardShortcuts",
	"domScroll", "wheel", "setChecked", "contenteditableFill", "appendText",
	"stateExpectations", "batch", "pageWindows", "tabScopedNavigation",
	"frameDiscovery", "sameOriginFrameRead", "sameOriginFrameClick",
	"sameOriginFrameQuery", "sameOriginFrameSubtree", "sameOriginFramePage", "oopif",
}

// InstancesParams is the params of browser.instances: empty, or the
// sessionId the reference's adapter sends with every call.
type InstancesParams struct {
	SessionID string `json:"sessionId,omitempty" len:",256"`
}

// Access modes (broker serve --access-mode).
const (
	// AccessRestricted: the owner approves every claim in the extension's
	// window, and the lease is scoped to the tab's exact origin.
	AccessRestricted = "restricted"
	// AccessPersonal: HTTP(S) tabs are leased without a prompt, scoped to
	// the tab.
	AccessPersonal = "personal"
)

// Status is the browser section of broker.status.
type Status struct {
	AccessMode   string        `json:"accessMode"`
	AllowOrigins []string      `json:"allowOrigins,omitempty"`
	Instances    []Instance    `json:"instances"`
	Leases       []StatusLease `json:"leases"`
}

// StatusLease is one live lease as broker.status reports it (no token).
type StatusLease struct {
	ID        string    `json:"id"`
	Tab       string    `json:"tab"`
	Origin    string    `json:"origin"`
	Scope     string    `json:"scope"`
	ExpiresAt time.Time `json:"expiresAt"`
}
