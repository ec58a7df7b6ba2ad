package agentapi

import "encoding/json"

// HelloParams are hello's params. Kind must be "agent"; Name and AgentID
// are labels shown to the owner, never permissions.
type HelloParams struct {
	Kind    string `json:"kind"`
	Name    string `json:"name,omitempty"`
	AgentID string `json:"agentId,omitempty"`
}

// HelloPending is hello's result while the owner has not admitted the
// connection: no session, mode or attention data.
type HelloPending struct {
	ProtocolVersion int    `json:"protocolVersion"`
	Conn            uint64 `json:"conn"`
	Kind            string `json:"kind"`
	Admission       string `json:"admission"`
}

// HelloResult is hello's result for an admitted connection. The session
// fields are null when no shared session is available to it.
type HelloResult struct {
	ProtocolVersion int     `json:"protocolVersion"`
	Conn            uint64  `json:"conn"`
	Kind            string  `json:"kind"`
	Admission       string  `json:"admission"`
	Attended        *string `json:"attended"`
	Session         *string `json:"session"`
	Mode            *string `json:"mode"`
	EffectiveMode   *string `json:"effectiveMode"`
}

// SessionInfo is one session in discovery.
type SessionInfo struct {
	ID       string `json:"id"`
	Index    int    `json:"index"` // 1-based, what switch_tab takes as a number
	Title    string `json:"title"`
	Mode     string `json:"mode"`
	Bound    bool   `json:"bound"`
	Attended bool   `json:"attended"`
}

// SessionsResult is the result of sessions and list_tabs: only the
// sessions this connection may participate in.
type SessionsResult struct {
	Sessions []SessionInfo `json:"sessions"`
	Count    int           `json:"count"`
	Bound    *string       `json:"bound"`
	Attended *string       `json:"attended"` // null unless this connection participates in it
}

// SwitchTabParams names the destination by 1-based number or by ID.
type SwitchTabParams struct {
	Tab json.RawMessage `json:"tab"`
}

// BindingResult is the result of switch_tab and open_tab.
type BindingResult struct {
	Session       string `json:"session"`
	Mode          string `json:"mode"`
	EffectiveMode string `json:"effectiveMode"`
}

// ReasonParams are the params of open_tab and request_attention.
type ReasonParams struct {
	Reason *string `json:"reason"`
}

// NavigationResult is navigation_affordances' result.
type NavigationResult struct {
	SwitchTab    bool     `json:"switch_tab"`
	OpenTab      bool     `json:"open_tab"`
	Destinations []string `json:"destinations"`
}

// AttentionResult is request_attention's result.
type AttentionResult struct {
	Requested bool `json:"requested"`
}

// Size is a grid's size.
type Size struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

// Position is a 0-based cell position.
type Position struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// Controller says who holds control of a session: the person ("human")
// or an agent connection.
type Controller struct {
	Kind string `json:"kind"` // human or agent
	Conn uint64 `json:"conn,omitempty"`
	Name string `json:"name,omitempty"`
	You  bool   `json:"you"` // the calling connection holds the lease
}

// Snapshot is the current terminal grid: no scrollback, no raw input, no
// environment. Concealed text and text in its own background colour read
// as blanks.
type Snapshot struct {
	SurfaceID       string     `json:"surfaceId"`
	Generation      uint64     `json:"generation"`
	Revision        uint64     `json:"revision"`
	OutputSeq       uint64     `json:"outputSeq"`
	Size            Size       `json:"size"`
	Cursor          *Position  `json:"cursor"`
	Screen          []string   `json:"screen"`
	AlternateScreen bool       `json:"alternateScreen"`
	Controller      Controller `json:"controller"`
	ProcessAlive    bool       `json:"processAlive"`
	Mode            string     `json:"mode"`
	EffectiveMode   string     `json:"effectiveMode"`
}

// AffordancesResult lists what the connection can do now.
type AffordancesResult struct {
	Session *string  `json:"session"`
	Tools   []string `json:"tools"`
}

// StatusResult is the limited status an agent may see.
type StatusResult struct {
	Session          *string     `json:"session"`
	Controller       *Controller `json:"controller"`
	Mode             *string     `json:"mode"`
	EffectiveMode    *string     `json:"effectiveMode"`
	Attended         bool        `json:"attended"`
	Shared           bool        `json:"shared"`
	SurfaceAvailable bool        `json:"surfaceAvailable"`
}

// ControlParams are request_control's params. Both are strings or null.
type ControlParams struct {
	Reason  *string `json:"reason"`
	Command *string `json:"command"`
}

// OriginalRequest is a control request as submitted: its params' JSON
// values without transport whitespace, at most [MaxOriginalRequest] bytes.
type OriginalRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// MaxOriginalRequest bounds a control request's original payload (the
// object {method, params}).
const MaxOriginalRequest = 64 << 10

// ControlResult is request_control's result: a granted lease.
type ControlResult struct {
	Granted         bool            `json:"granted"`
	RequestID       string          `json:"requestId"`
	Session         string          `json:"session"`
	OriginalRequest OriginalRequest `json:"originalRequest"`
}

// ReleaseResult is release_control's result.
type ReleaseResult struct {
	Released bool `json:"released"`
}

// TypeParams are type's params: text without newlines or other controls.
type TypeParams struct {
	Text string `json:"text"`
}

// TypeResult is type's result. In co-pilot the text went to a proposal.
type TypeResult struct {
	Typed      int    `json:"typed"`
	ProposalID string `json:"proposalId,omitempty"`
}

// SendKeyParams are send_key's params. Intent says what an Enter is meant
// to do; policy may require it.
type SendKeyParams struct {
	Key    string  `json:"key"`
	Intent *string `json:"intent"`
}

// Results of send_key.
const (
	KeySent      = "sent"      // written (autopilot), or added to the proposal (co-pilot)
	KeyExecuted  = "executed"  // Enter reached the terminal
	KeyCancelled = "cancelled" // the wait ended without it (owner took over, grace cancelled)
	KeyRejected  = "rejected"  // the owner rejected the proposal or command
	KeyDenied    = "denied"    // policy refuses the command
)

// SendKeyResult is send_key's result.
type SendKeyResult struct {
	Result     string `json:"result"`
	ProposalID string `json:"proposalId,omitempty"`
	ExecID     string `json:"execId,omitempty"`
	ApprovalID string `json:"approvalId,omitempty"`
	// State is the proposal's or approval's state when send_key stopped
	// waiting before the owner answered (then Result is "sent").
	State string `json:"state,omitempty"`
}

// InterruptResult is interrupt's result.
type InterruptResult struct {
	Interrupted bool `json:"interrupted"`
}

// States of a control request.
const (
	RequestPending = "pending"
	RequestGranted = "granted"
	RequestDenied  = "denied"
	RequestExpired = "expired"
)

// States of a co-pilot proposal.
const (
	ProposalDrafting = "drafting"
	ProposalReady    = "ready"
	ProposalExecuted = "executed"
	ProposalRejected = "rejected"
	ProposalDenied   = "denied"
)

// States of a command approval.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalRejected = "rejected"
	ApprovalExpired  = "expired"
)

// States of an execution.
const (
	ExecScheduled = "scheduled"
	ExecExecuted  = "executed"
	ExecCancelled = "cancelled"
)

// IDParams carry the ID a state poll asks about.
type IDParams struct {
	ApprovalID string `json:"approvalId,omitempty"`
	RequestID  string `json:"requestId,omitempty"`
	ProposalID string `json:"proposalId,omitempty"`
	ExecID     string `json:"execId,omitempty"`
}

// ControlRequestState is control_request_state's result.
type ControlRequestState struct {
	RequestID       string          `json:"requestId"`
	State           string          `json:"state"`
	OriginalRequest OriginalRequest `json:"originalRequest"`
}

// ProposalState is proposal_state's result.
type ProposalState struct {
	ProposalID string `json:"proposalId"`
	State      string `json:"state"`
	Text       string `json:"text"` // the proposal as the owner sees it
}

// ApprovalState is check_approval's result.
type ApprovalState struct {
	ApprovalID string `json:"approvalId"`
	State      string `json:"state"`
	Command    string `json:"command"`
}

// ExecState is exec_state's result.
type ExecState struct {
	ExecID string `json:"execId"`
	State  string `json:"state"`
}
