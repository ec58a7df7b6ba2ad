package apps

// The runner protocol: between the hub and a snug provider (the extension's
// service worker), which relays for its runner tabs. Each runner tab shows
// one app; the provider names it with a runner id of its own, unique on its
// connection.
//
// Everything that travels for a runner — the app's HTML, its frames both
// ways, the display metadata — is cut into pieces: UTF-8 bytes, base64, at
// most MaxPieceBytes each, so that no message is over the native-messaging
// and framing caps (1 MiB) while a db frame may be 8 MiB.

// Provider → broker requests.
const (
	// ProviderAttach: a runner tab wants to show an app. The hub answers
	// with the app and then delivers its document (PieceHTML).
	ProviderAttach = "snug.attach"
)

// Provider → broker events, applied in the order sent.
const (
	// EventFrame carries one piece of a frame the app posted.
	EventFrame = "snug.frame"
	// EventLoad says the app document (re)loaded in the runner's iframe:
	// the hub mints a new instanceId and sends host-ready (R4).
	EventLoad = "snug.load"
	// EventDetach says the runner tab is gone.
	EventDetach = "snug.detach"
	// EventResetAgent is the user's explicit reset, on the runner's own
	// chrome, after three agent replies in a row failed to parse (R6).
	EventResetAgent = "snug.resetAgent"
)

// Broker → provider requests.
const (
	// CallOpenTab asks the provider to open a runner tab for an app.
	CallOpenTab = "snug.openTab"
	// CallDeliver carries pieces for runner tabs, in order.
	CallDeliver = "snug.deliver"
)

// Piece kinds, broker → provider.
const (
	PieceHTML   = "html"   // the app document to load in the iframe
	PieceFrame  = "frame"  // a Snug frame for the app
	PieceApp    = "app"    // display metadata (JSON of Display) for the host chrome
	PieceClosed = "closed" // the hub dropped the runner; data is the reason, in words
)

// Sizes of the runner protocol.
const (
	// MaxPieceBytes bounds one piece's bytes before base64.
	MaxPieceBytes = 384 << 10
	// MaxDeliverChars bounds the base64 of one deliver call's pieces.
	MaxDeliverChars = 768 << 10
	// MaxRelayBytes bounds a message the runner relays from the app: the
	// largest size class (8 MiB) and room to answer one over it; a larger
	// message is dropped in the runner tab, which says so on its chrome.
	MaxRelayBytes = 9 << 20
	// MaxRunners bounds the runner tabs of one provider.
	MaxRunners = 32
	// MaxRunnerIDChars bounds a runner id.
	MaxRunnerIDChars = 64
)

// AttachParams are ProviderAttach's params.
type AttachParams struct {
	Runner string `json:"runner"`
	App    string `json:"app"`
}

// OpenTabParams are CallOpenTab's params.
type OpenTabParams struct {
	App   string `json:"app"`
	Title string `json:"title"`
}

// OpenTabResult is CallOpenTab's answer.
type OpenTabResult struct {
	Tab int `json:"tab"`
}

// Piece is one piece, either way. Seq numbers a runner's messages in one
// direction; Part numbers the pieces of one message from 0; Last marks its
// final piece.
type Piece struct {
	Runner string `json:"runner"`
	Kind   string `json:"kind,omitempty"` // broker → provider only
	Seq    int64  `json:"seq"`
	Part   int    `json:"part"`
	Last   bool   `json:"last"`
	Data   string `json:"data"` // base64 of the bytes
}

// DeliverParams are CallDeliver's params.
type DeliverParams struct {
	Pieces []Piece `json:"pieces"`
}

// RunnerParams are the params of EventLoad, EventDetach and
// EventResetAgent.
type RunnerParams struct {
	Runner string `json:"runner"`
}

// Display is what the runner's chrome shows of an app: the installed
// identity, and what the app announced about itself (display metadata
// only, R4).
type Display struct {
	ID          string `json:"id"`
	Version     int    `json:"version"`
	DisplayName string `json:"displayName"`
	Description string `json:"description,omitempty"`
	IconEmoji   string `json:"iconEmoji,omitempty"`
	IconColor   string `json:"iconColor,omitempty"`
	// Announced is true once the app announced itself; the names above
	// are then its own.
	Announced bool `json:"announced"`
	// Agent says whether app turns can be answered now.
	Agent bool `json:"agent"`
	// AgentBlocked is set after three unparsable replies in a row: the
	// user must reset before the agent is called again.
	AgentBlocked bool `json:"agentBlocked"`
	// AgentUnconfirmed is set while the agent settings that came with an
	// imported file wait for the user's confirmation.
	AgentUnconfirmed bool `json:"agentUnconfirmed,omitempty"`
}
