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
	// EventChat is what the user did in the chat panel beside the app, on
	// the runner's own chrome (ChatParams): a message, or a decision on
	// what the host proposed. Only a provider the owner's own software
	// runs is heard.
	EventChat = "snug.chat"
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
	PieceChat   = "chat"   // an item for the chat panel (JSON of ChatItem)
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

// Chat panel operations (ChatParams.Op).
const (
	ChatSend    = "send"    // a message the user typed
	ChatApprove = "approve" // run a proposed data change
	ChatDecline = "decline" // drop it: nothing runs
	ChatRevert  = "revert"  // restore an earlier version of the app
)

// MaxChatChars bounds a chat message (UTF-16 units, as the panel counts).
const MaxChatChars = 4000

// ChatParams are EventChat's params.
type ChatParams struct {
	Runner string `json:"runner"`
	Op     string `json:"op"`
	// ID names a sent message; the items answering it carry it (ReplyTo).
	ID   string `json:"id,omitempty"`
	Text string `json:"text,omitempty"`
	// Proposal is the data change approved or declined.
	Proposal string `json:"proposal,omitempty"`
	// Version is the version a revert restores.
	Version int `json:"version,omitempty"`
}

// Chat item kinds (ChatItem.Kind).
const (
	ItemAnswer   = "answer"   // an answer in words; for a data read, with its query and rows
	ItemClarify  = "clarify"  // the message could not be routed: say it again
	ItemProposal = "proposal" // a data change waiting for the user's decision
	ItemExecuted = "executed" // an approved data change ran
	ItemHalted   = "halted"   // an approved change did not run: its rows changed since the preview
	ItemDeclined = "declined" // a declined change: nothing ran
	ItemVersion  = "version"  // the feature lane saved a new version of the app
	ItemReverted = "reverted" // an earlier version was restored
	ItemRefused  = "refused"  // the lane cannot do it here; nothing was done
	ItemError    = "error"    // it failed; Text says what did and did not happen
)

// ChatItem is one thing the chat panel shows from the host. Text, the
// statements and the values are untrusted for display: the panel shows
// them as text, never as markup.
type ChatItem struct {
	// ReplyTo is the ChatParams.ID of the message this answers.
	ReplyTo string `json:"replyTo,omitempty"`
	Kind    string `json:"kind"`
	Intent  string `json:"intent,omitempty"`
	Lane    string `json:"lane,omitempty"`
	Text    string `json:"text"`
	// SQL are the statements that ran (a read) or would run (a proposal),
	// verbatim.
	SQL      []string      `json:"sql,omitempty"`
	Result   *ChatResult   `json:"result,omitempty"`
	Proposal *ChatProposal `json:"proposal,omitempty"`
	Version  *ChatVersion  `json:"version,omitempty"`
}

// ChatResult is a read's rows, as bounded for the model.
type ChatResult struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated string   `json:"truncated,omitempty"`
}

// MaxChatChanges bounds the changed rows a proposal shows; Total counts
// them all.
const MaxChatChanges = 200

// ChatProposal is a data change and the rows it changes, computed on a
// throwaway copy of the app's data.
type ChatProposal struct {
	ID      string       `json:"id"`
	Changes []ChatChange `json:"changes,omitempty"`
	Total   int          `json:"total"`
}

// ChatChange is one row a proposal changes: its values before and after,
// as SQL literals ('text', 42, NULL, X'0a').
type ChatChange struct {
	Table   string   `json:"table"`
	Op      string   `json:"op"` // insert, update or delete
	Columns []string `json:"columns"`
	Before  []string `json:"before,omitempty"`
	After   []string `json:"after,omitempty"`
}

// ChatVersion is a version the chat wrote or restored, and the version
// one click reverts to.
type ChatVersion struct {
	Version  int `json:"version"`
	Restores int `json:"restores,omitempty"`
}
