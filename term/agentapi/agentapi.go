// Package agentapi is the vocabulary of the agent socket v2
// (spec/agent-socket-v2.md) for shared terminals: method names, error
// codes, params and results, events, and the [Session] contract through
// which the socket server reaches a terminal session.
//
// Every type here is JSON-serialisable, so a session can live in another
// process (the owner's `broker term`) with its calls and events relayed.
//
// # Wire
//
// One JSON value per line. A request is {"id","method","params"}; its
// response is {"id","result"} or {"id","error":{"code","message"}}. An
// event has no id: {"event":NAME,"params":{…}}, and the params of a
// session's event name it in "session".
package agentapi

import (
	"context"
	"encoding/json"
	"fmt"
)

// ProtocolVersion is what hello reports.
const ProtocolVersion = 2

// Methods an agent may call.
const (
	MethodHello                 = "hello"
	MethodSessions              = "sessions"
	MethodListTabs              = "list_tabs"
	MethodSwitchTab             = "switch_tab"
	MethodOpenTab               = "open_tab"
	MethodNavigationAffordances = "navigation_affordances"
	MethodRequestAttention      = "request_attention"
	MethodSnapshot              = "snapshot"
	MethodAffordances           = "affordances"
	MethodStatus                = "status"
	MethodRequestControl        = "request_control"
	MethodReleaseControl        = "release_control"
	MethodType                  = "type"
	MethodSendKey               = "send_key"
	MethodInterrupt             = "interrupt"
	MethodCheckApproval         = "check_approval"
	MethodControlRequestState   = "control_request_state"
	MethodProposalState         = "proposal_state"
	MethodExecState             = "exec_state"
)

// Discovery methods are answered admission_pending at once while the owner
// has not admitted the connection; every other method waits for the answer.
var Discovery = map[string]bool{
	MethodSessions:              true,
	MethodListTabs:              true,
	MethodAffordances:           true,
	MethodNavigationAffordances: true,
	MethodStatus:                true,
}

// Reads are the methods a connection that closed its write side still gets
// answered; anything else (it writes, requests control or changes the
// binding) is answered connection_closing and does not run.
// release_control only gives up authority and is answered too.
var Reads = map[string]bool{
	MethodHello:                 true,
	MethodSessions:              true,
	MethodListTabs:              true,
	MethodNavigationAffordances: true,
	MethodAffordances:           true,
	MethodStatus:                true,
	MethodSnapshot:              true,
	MethodCheckApproval:         true,
	MethodControlRequestState:   true,
	MethodProposalState:         true,
	MethodExecState:             true,
	MethodReleaseControl:        true,
}

// OwnerOnly names operations of the owner's own bridge. They exist, but
// never on the agent socket: calling one is owner_required.
var OwnerOnly = map[string]bool{
	"accept_proposal":    true,
	"admission_snapshot": true,
	"approve":            true,
	"input":              true,
	"reject_proposal":    true,
	"set_attended":       true,
	"set_mode":           true,
	"set_settings":       true,
	"set_sharing":        true,
	"sharing_state":      true,
	"subscribe":          true,
	"subscribe_output":   true,
	"take":               true,
}

// Error codes of the spec ("Relevant errors").
const (
	CodeHelloRequired      = "hello_required"
	CodeOwnerRequired      = "owner_required"
	CodeSurfaceUnavailable = "surface_unavailable"
	CodeNotAvailable       = "not_available"
	CodeBusy               = "busy"
	CodeNotController      = "not_controller"
	CodeLeaseExpired       = "lease_expired"
	CodeProcessExited      = "process_exited"
	CodeInvalidInput       = "invalid_input"
	CodeNotFound           = "not_found"
	CodeRateLimited        = "rate_limited"
	CodeInputPending       = "input_pending"
	CodeApprovalPending    = "approval_pending"
	CodeExecPending        = "exec_pending"
	CodeProposalPending    = "proposal_pending"
	CodeIntentRequired     = "intent_required"
	CodeMasked             = "masked"
	CodeControlDenied      = "control_denied"
	CodeWrongMode          = "wrong_mode"
	CodeUnsupported        = "unsupported"
	CodeConnectionClosing  = "connection_closing"
	CodeAdmissionPending   = "admission_pending"
	CodeAdmissionDenied    = "admission_denied"
	CodeParse              = "parse"
)

// Error is an error answer. Reason is the cause of a refusal for the
// owner's trace (CONN_TRACE_REFUSALS=1); the server never sends it to an
// agent, which sees only Code and Message.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return e.Code + ": " + e.Message + " (" + e.Reason + ")"
	}
	return e.Code + ": " + e.Message
}

// Errorf returns an error answer with a message for the agent.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unavailable is the generic answer to private or unauthorised session
// access: the agent learns nothing but that the surface is unavailable,
// and reason goes only to the owner's trace.
func Unavailable(reason string) *Error {
	return &Error{
		Code:    CodeSurfaceUnavailable,
		Message: "the shared terminal is not available to this connection; ask the person to share it, then take a fresh snapshot",
		Reason:  reason,
	}
}

// Modes of agent behaviour.
const (
	ModeCopilot   = "copilot"   // typing accumulates a proposal; Enter waits for the owner
	ModeAutopilot = "autopilot" // the controller's input goes to the terminal
	// ModeObserve is the effective mode of a connection that cannot write
	// here now (the process exited).
	ModeObserve = "observe"
)

// Event names sent to agents.
const (
	EventToolsChanged   = "tools_changed"   // what this connection may do changed: call affordances
	EventModeChanged    = "mode_changed"    // {session, mode, effectiveMode}
	EventControlRevoked = "control_revoked" // {session, reason}
	EventControlRequest = "control_request" // {session, requestId, state}
	EventApproval       = "approval"        // {session, approvalId, state}
	EventProposal       = "proposal"        // {session, proposalId, state}
	EventExec           = "exec"            // {session, execId, state}
	EventAttention      = "attention"       // {session, state}
)

// Session is one shared terminal as the agent socket server reaches it.
// Sessions decide everything about their terminal (participation, control,
// proposals, policy); the server owns connections (hello, admission,
// binding, half-close, rate limits) and checks, before writing anything to
// an agent, that what a session produced is still within the session's
// current sharing boundary (see [Reply] and [Event]).
type Session interface {
	// ID names the session ("tab") on the wire.
	ID() string
	// Subscribe makes the session report to sink, starting with an
	// EventState of its current state. It is called once.
	Subscribe(sink Sink)
	// Call runs one agent method for a connection. An *Error chooses the
	// answer; any other error is reported as surface_unavailable. ctx is
	// cancelled when the connection closes or half-closes, and a session
	// must then stop waiting and give up what it was waiting for.
	Call(ctx context.Context, req Request) (Reply, error)
	// Release drops everything conn holds in the session at once: its
	// lease, its pending control request, proposals, approvals and
	// scheduled executions. The connection left the tab or disconnected.
	Release(conn uint64)
	// Peers tells the session which agent connections exist, so that its
	// owner can admit them and choose who participates. The list is whole
	// each time.
	Peers(peers []Peer)
}

// Request is one agent method for a session.
type Request struct {
	Conn   uint64          `json:"conn"`
	Label  string          `json:"label"` // the agent's name, for the owner
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Reply is a session's result, with the boundary it was computed under:
// the server drops it (and answers surface_unavailable) if the session's
// participation generation, or for a snapshot its surface generation, has
// moved past these by the time the reply would be written.
type Reply struct {
	Result     json.RawMessage `json:"result"`
	Generation uint64          `json:"generation"`
	Surface    uint64          `json:"surface,omitempty"` // set by snapshots
}

// Sink receives a session's events in order. Its methods must not block
// and must not call back into the session.
type Sink interface {
	Event(Event)
}

// EventKind says what a session reports.
type EventKind string

// Kinds of session events.
const (
	// EventState carries the session's sharing state. Every revocation
	// (sharing stopped, a participant removed, the process gone) raises
	// the participation generation; adding a participant does not.
	EventState EventKind = "state"
	// EventAgent is an event for one connection (Name, Params), valid only
	// while Generation is current.
	EventAgent EventKind = "agent"
	// EventAdmission is the owner's answer about a pending connection.
	EventAdmission EventKind = "admission"
	// EventAttended says the owner is using this session now.
	EventAttended EventKind = "attended"
	// EventClosed says the session ended; it is the last event.
	EventClosed EventKind = "closed"
)

// Event is one report of a session.
type Event struct {
	Session string    `json:"session"`
	Kind    EventKind `json:"kind"`

	State *State `json:"state,omitempty"` // EventState; EventAdmission when it admits into the session

	Conn       uint64          `json:"conn,omitempty"`       // EventAgent, EventAdmission
	Generation uint64          `json:"generation,omitempty"` // EventAgent
	Name       string          `json:"name,omitempty"`       // EventAgent
	Params     json.RawMessage `json:"params,omitempty"`     // EventAgent
	Allowed    bool            `json:"allowed,omitempty"`    // EventAdmission
}

// State is what the server must know of a session to route and check.
type State struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Shared       bool     `json:"shared"`
	Participants []uint64 `json:"participants"`
	Generation   uint64   `json:"generation"` // participation generation
	Surface      uint64   `json:"surface"`    // surface generation
	// Masked lists the agent methods the owner withholds in this session
	// (switch_tab and open_tab are checked by the server).
	Masked       []string `json:"masked,omitempty"`
	Mode         string   `json:"mode"`
	ProcessAlive bool     `json:"processAlive"`
}

// Participates reports whether conn may participate in the session.
func (s *State) Participates(conn uint64) bool {
	if s == nil || !s.Shared {
		return false
	}
	for _, c := range s.Participants {
		if c == conn {
			return true
		}
	}
	return false
}

// IsMasked reports whether the owner withholds method here.
func (s *State) IsMasked(method string) bool {
	for _, m := range s.Masked {
		if m == method {
			return true
		}
	}
	return false
}

// Peer is an agent connection as a session's owner sees it.
type Peer struct {
	Conn      uint64 `json:"conn"`
	Label     string `json:"label"`
	Admission string `json:"admission"` // pending, granted or denied
}
