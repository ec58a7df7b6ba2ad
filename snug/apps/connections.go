package apps

import "encoding/json"

// Connected apps: an app's connections to third-party APIs (Snug Part III
// §12–§15). Requirements are proposed by the user or an agent, never by
// running app code; grants are made only in the runner tab's host chrome;
// credentials are typed there, or given on standard input to
// `broker app connections`, and never come back from any method.

// Client methods.
const (
	MethodConnections       = "snug.connections"           // an app's connections
	MethodConnectionDeclare = "snug.connection.declare"    // propose a requirement (declared; an approved row's change is staged)
	MethodConnectionSet     = "snug.connection.credential" // store one credential value
	MethodConnectionRevoke  = "snug.connection.revoke"     // revoke an approved connection
)

// Provider → broker requests from a runner tab's host chrome (the connect
// flow). Only a provider that is an owner surface may make them, and only
// for its own runner's app.
const (
	ProviderConnections = "snug.connections"          // {runner} → [Connection]
	ProviderApprove     = "snug.connection.approve"   // ApproveParams → Connection
	ProviderReapprove   = "snug.connection.reapprove" // ApproveParams → Connection
	ProviderRevoke      = "snug.connection.revoke"    // RunnerSlotParams → Connection
	// ProviderAuthorize starts an OAuth authorization-code sign-in of an
	// approved connection: AuthorizeParams → AuthorizeResult (the
	// provider's authorize URL, for the user's browser).
	ProviderAuthorize = "snug.connection.authorize"
	// ProviderComplete finishes it with the address the browser came back
	// to: CompleteParams → Connection.
	ProviderComplete = "snug.connection.complete"
)

// CallConfirm is the broker's question to the owner, shown in the runner
// tab's host chrome, never in the app: a mutating net request
// (ConfirmNet) or a URL to open (ConfirmOpenURL). Answer: ConfirmResult.
const CallConfirm = "snug.confirm"

// Confirm kinds.
const (
	ConfirmNet     = "net"
	ConfirmOpenURL = "openUrl"
)

// ConfirmParams are CallConfirm's params: everything the user decides on,
// in full. For a net request: the host, method and URL it goes to (on the
// snug-connection:// path the resolved ones, and the slot) and its body.
// For open-url: the URL.
type ConfirmParams struct {
	Runner string  `json:"runner"`
	Kind   string  `json:"kind"`
	App    string  `json:"app"` // the app's installed name
	Host   string  `json:"host,omitempty"`
	Method string  `json:"method,omitempty"`
	URL    string  `json:"url"`
	Body   *string `json:"body,omitempty"`
	Slot   string  `json:"slot,omitempty"`
}

// ConfirmResult is the owner's answer: for net, Allowed; for open-url,
// Status opened (the page opened it, on the user's click) or declined.
type ConfirmResult struct {
	Allowed bool   `json:"allowed,omitempty"`
	Status  string `json:"status,omitempty"`
}

// Connection is a connection as the host shows it: never a credential,
// only which fields have one.
type Connection struct {
	App                string          `json:"app"`
	Slot               string          `json:"slot"`
	Provider           string          `json:"provider"`
	Kind               string          `json:"kind"`
	Status             string          `json:"status"` // declared, approved or revoked
	NeedsReapproval    bool            `json:"needsReapproval"`
	Imported           bool            `json:"imported"`
	Provenance         string          `json:"provenance"`
	RequirementVersion int             `json:"requirementVersion"`
	Requirement        json.RawMessage `json:"requirement"` // canonical JSON, shown verbatim
	// RequirementText is the same, as text: what an approval names as
	// reviewed (and PendingText for a re-approval).
	RequirementText string `json:"requirementText"`
	// Ceiling is what an approval freezes now (the requirement's hosts);
	// AllowedHosts what the last approval froze.
	Ceiling      []string        `json:"ceiling"`
	AllowedHosts []string        `json:"allowedHosts"`
	Pending      json.RawMessage `json:"pending,omitempty"` // a staged change, canonical JSON
	PendingText  string          `json:"pendingText,omitempty"`
	PendingHosts []string        `json:"pendingHosts,omitempty"`
	Diff         []Change        `json:"diff,omitempty"` // the staged change, field by field
	Credentials  map[string]bool `json:"credentials"`    // field → a value is stored
	ApprovedAt   string          `json:"approvedAt,omitempty"`
	RevokedAt    string          `json:"revokedAt,omitempty"`
	// SignIn is an OAuth connection's state (pending, connected, expired
	// or error) and SignInError the provider's last refusal, scrubbed.
	SignIn      string `json:"signIn,omitempty"`
	SignInError string `json:"signInError,omitempty"`
	// PriorRevocations are the app's revoked connections to the same
	// provider or hosts under other slots, shown when reconnecting.
	PriorRevocations []Revocation `json:"priorRevocations,omitempty"`
}

// Revocation is an earlier revocation: its slot, provider and when.
type Revocation struct {
	Slot      string `json:"slot"`
	Provider  string `json:"provider"`
	RevokedAt string `json:"revokedAt"`
}

// Change is one field of a staged change: its path and its old and new
// values (JSON text; "" where absent).
type Change struct {
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// ConnectionsParams are snug.connections' params.
type ConnectionsParams struct {
	App string `json:"app" len:"1,128"`
}

// DeclareParams are snug.connection.declare's params: a requirement, JSON
// text (Snug §12.5), recorded with provenance "user".
type DeclareParams struct {
	App         string `json:"app" len:"1,128"`
	Requirement string `json:"requirement" len:"1,65536" jsonschema:"the connection requirement, JSON (Snug Part III §12.5)"`
}

// CredentialParams are snug.connection.credential's params. The value is
// written to snug_secrets and never read back by any method; an empty
// value removes it.
type CredentialParams struct {
	App   string `json:"app" len:"1,128"`
	Slot  string `json:"slot" len:"1,40"`
	Field string `json:"field" len:"1,40"`
	Value string `json:"value" len:",8192"`
}

// SlotParams name one connection of an app.
type SlotParams struct {
	App  string `json:"app" len:"1,128"`
	Slot string `json:"slot" len:"1,40"`
}

// RunnerSlotParams name one connection of a runner's app.
type RunnerSlotParams struct {
	Runner string `json:"runner"`
	Slot   string `json:"slot"`
}

// AuthorizeParams start a sign-in: the slot, and the https address the
// provider sends the browser back to (the extension's
// chrome.identity redirect URL).
type AuthorizeParams struct {
	Runner      string `json:"runner"`
	Slot        string `json:"slot"`
	RedirectURI string `json:"redirectUri"`
}

// AuthorizeResult is the provider's authorize URL, with PKCE S256 and a
// signed state.
type AuthorizeResult struct {
	URL string `json:"url"`
}

// CompleteParams finish a sign-in: the address the browser came back to,
// with the code and the state.
type CompleteParams struct {
	Runner   string `json:"runner"`
	Slot     string `json:"slot"`
	Callback string `json:"callback"`
}

// ApproveParams are the connect flow's approval: the canonical requirement
// the user reviewed (for a re-approval, the staged one), and the values
// typed into its fields.
type ApproveParams struct {
	Runner      string            `json:"runner"`
	Slot        string            `json:"slot"`
	Reviewed    string            `json:"reviewed"`
	Credentials map[string]string `json:"credentials,omitempty"`
}
