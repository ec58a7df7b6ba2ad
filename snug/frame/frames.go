package frame

import "encoding/json"

// Type is a frame's type string. The snug: prefix is reserved (R2).
type Type string

// The thirteen frame types of Part I §2.
const (
	TypeAppAnnounce    Type = "snug:app-announce"
	TypeHostReady      Type = "snug:host-ready"
	TypeAppMessage     Type = "snug:app-message"
	TypeAppCancel      Type = "snug:app-cancel"
	TypeAppResponse    Type = "snug:app-response"
	TypeDBRequest      Type = "snug:db-request"
	TypeDBResponse     Type = "snug:db-response"
	TypeNetRequest     Type = "snug:net-request"
	TypeNetResponse    Type = "snug:net-response"
	TypeOpenURLRequest Type = "snug:open-url-request"
	TypeOpenURLResult  Type = "snug:open-url-result"
	TypeHostEvent      Type = "snug:host-event"
	TypeAppEvent       Type = "snug:app-event"
)

// Types lists the thirteen frame types in the order of Part I §2.
var Types = [...]Type{
	TypeAppAnnounce, TypeHostReady, TypeAppMessage, TypeAppCancel, TypeAppResponse,
	TypeDBRequest, TypeDBResponse, TypeNetRequest, TypeNetResponse,
	TypeOpenURLRequest, TypeOpenURLResult, TypeHostEvent, TypeAppEvent,
}

// typePrefix marks a message as Snug traffic; anything else is ignored.
const typePrefix = "snug:"

// Known reports whether t is one of the thirteen frame types.
func (t Type) Known() bool {
	switch t {
	case TypeAppAnnounce, TypeHostReady, TypeAppMessage, TypeAppCancel, TypeAppResponse,
		TypeDBRequest, TypeDBResponse, TypeNetRequest, TypeNetResponse,
		TypeOpenURLRequest, TypeOpenURLResult, TypeHostEvent, TypeAppEvent:
		return true
	}
	return false
}

// FromApp reports whether frames of type t travel from the app to the host.
// host-event and app-event are the one pair that goes either way; here
// host-event counts as the host's and app-event as the app's.
func (t Type) FromApp() bool {
	switch t {
	case TypeAppAnnounce, TypeAppMessage, TypeAppCancel, TypeDBRequest, TypeNetRequest,
		TypeOpenURLRequest, TypeAppEvent:
		return true
	}
	return false
}

// SizeLimit is the size class of t in bytes (R6).
func (t Type) SizeLimit() int {
	switch t {
	case TypeDBRequest, TypeDBResponse:
		return MaxDBFrameBytes
	case TypeNetRequest, TypeNetResponse:
		return MaxNetFrameBytes
	}
	return MaxFrameBytes
}

// answerType is the type of the frame that answers a request of type t, or
// "" when t is not a request.
func (t Type) answerType() Type {
	switch t {
	case TypeAppMessage:
		return TypeAppResponse
	case TypeDBRequest:
		return TypeDBResponse
	case TypeNetRequest:
		return TypeNetResponse
	case TypeOpenURLRequest:
		return TypeOpenURLResult
	}
	return ""
}

// Frame is one parsed frame: *AppAnnounce, *HostReady, *AppMessage,
// *AppCancel, *AppResponse, *DBRequest, *DBResponse, *NetRequest,
// *NetResponse, *OpenURLRequest, *OpenURLResult, *HostEvent or *AppEvent;
// and, for sending only, a [Hint].
type Frame interface {
	FrameType() Type
}

// Request is a frame that asks the host for an answer: *AppMessage,
// *DBRequest, *NetRequest or *OpenURLRequest. Each accepted request gets
// exactly one terminal answer (R3).
type Request interface {
	Frame
	// IDs returns the frame's requestId and the instanceId it echoes.
	IDs() (requestID, instanceID string)
}

// AppAnnounce is snug:app-announce: the app's self-description on mount.
// Every field is display metadata; AppID is never a security principal (R4).
type AppAnnounce struct {
	AppID       string
	DisplayName string
	Description string // "" when absent
	IconEmoji   string // "" when absent
	IconColor   string // "" when absent
}

// Theme is host-ready's theme.
type Theme string

// The two themes.
const (
	ThemeLight Theme = "light"
	ThemeDark  Theme = "dark"
)

// HostReady is snug:host-ready, sent on every load of the app document and
// as the acknowledgement of every announce.
type HostReady struct {
	InstanceID       string
	ProtocolVersions []int
	Capabilities     Capabilities
	Theme            Theme
	Locale           string // "" omits it
}

// Capabilities are host-ready's capability flags. Streaming, DB and Auth are
// always sent; Net and OpenURL only when true, since an absent flag is how an
// app knows to render its fallback. A host sets a flag only when the matching
// handler is wired.
type Capabilities struct {
	Streaming bool
	DB        bool
	Auth      bool
	Net       bool
	OpenURL   bool
}

// AppMessage is snug:app-message: an agent request.
type AppMessage struct {
	RequestID      string
	InstanceID     string
	AppID          string // display metadata, as in AppAnnounce
	Action         string
	Payload        json.RawMessage // nil when absent
	State          json.RawMessage // nil when absent
	ResponseSchema json.RawMessage // nil when absent
}

// AppCancel is snug:app-cancel: abort the in-flight request RequestID.
type AppCancel struct {
	RequestID  string
	InstanceID string
}

// AppResponse is snug:app-response in one of its three shapes (R3): a
// streaming frame (OK, Streaming, Text, Seq): cumulative text,
// display-provisional; a final frame (OK, Data, which is a JSON object); or
// an error (Error, with OK false). The final and error frames are terminal.
type AppResponse struct {
	RequestID string
	OK        bool
	Streaming bool
	Text      string
	Seq       *int64
	Data      json.RawMessage
	Error     *ResponseError
}

// ResponseError is the error object of app-response, db-response and
// net-response (R5).
type ResponseError struct {
	Code              string // 1–64 characters; an open string
	Message           string
	Retryable         bool
	RawExcerpt        string // ≤200 characters; "" omits it
	AttemptsRemaining *int   // nil omits it
}

// DBOp is a db-request's operation.
type DBOp string

// The five db operations.
const (
	DBExec   DBOp = "exec"
	DBExport DBOp = "export"
	DBImport DBOp = "import"
	DBKVGet  DBOp = "kvGet"
	DBKVSet  DBOp = "kvSet"
)

// DBRequest is snug:db-request: host-brokered per-app storage. Which fields
// are set depends on Op: exec (SQL, Params), export (none), import
// (BytesBase64), kvGet (Key), kvSet (Key, Value).
type DBRequest struct {
	RequestID   string
	InstanceID  string
	Op          DBOp
	SQL         string
	Params      json.RawMessage // a JSON array; nil when absent
	BytesBase64 string
	Key         string
	Value       json.RawMessage // any JSON value, null included
}

// DBResponse is snug:db-response: a result (OK, with any of Rows, Columns,
// Value, BytesBase64) or an error.
type DBResponse struct {
	RequestID   string
	OK          bool
	Rows        json.RawMessage // a JSON array of arrays; nil omits it
	Columns     []string        // nil omits it
	Value       json.RawMessage // nil omits it
	BytesBase64 string          // "" omits it
	Error       *ResponseError
}

// NetRequest is snug:net-request, the strict frame of the governed network
// capability (§3). It has no appId: the host binds it to the app it came
// from.
type NetRequest struct {
	RequestID  string
	InstanceID string
	URL        string
	Method     string            // one of NetMethods
	Headers    map[string]string // nil when absent; never a credential header
	Body       *string           // nil when absent; never on GET or HEAD
}

// NetResponse is snug:net-response: the answer to a net-request (OK, Status,
// Headers, Body, Truncated) or an error. Headers must pass
// [IsWhitelistedResponseHeader].
type NetResponse struct {
	RequestID string
	OK        bool
	Status    int
	Headers   map[string]string
	Body      string
	Truncated bool // false omits it
	Error     *ResponseError
}

// OpenURLRequest is snug:open-url-request: ask the host to open URL, an
// https URL without userinfo, in the user's real browser after its own
// confirmation (§4).
type OpenURLRequest struct {
	RequestID  string
	InstanceID string
	URL        string
}

// OpenURLStatus is how an open-url request ended.
type OpenURLStatus string

// The three outcomes.
const (
	OpenURLOpened   OpenURLStatus = "opened"
	OpenURLDeclined OpenURLStatus = "declined"
	OpenURLRefused  OpenURLStatus = "refused"
)

// OpenURLResult is snug:open-url-result, the one answer to an open-url
// request.
type OpenURLResult struct {
	RequestID string
	Status    OpenURLStatus
	Reason    string // ≤300 characters; "" omits it
}

// HostEvent is a parsed snug:host-event. The host never sends one built
// from raw data: it sends a [Hint] (R7).
type HostEvent struct {
	Event string
	Data  json.RawMessage // nil when absent
}

// AppEvent is snug:app-event, the app's open event channel (resize,
// visibility, …). Unknown events are ignored by whoever receives them.
type AppEvent struct {
	Event string
	Data  json.RawMessage // nil when absent
}

func (*AppAnnounce) FrameType() Type    { return TypeAppAnnounce }
func (*HostReady) FrameType() Type      { return TypeHostReady }
func (*AppMessage) FrameType() Type     { return TypeAppMessage }
func (*AppCancel) FrameType() Type      { return TypeAppCancel }
func (*AppResponse) FrameType() Type    { return TypeAppResponse }
func (*DBRequest) FrameType() Type      { return TypeDBRequest }
func (*DBResponse) FrameType() Type     { return TypeDBResponse }
func (*NetRequest) FrameType() Type     { return TypeNetRequest }
func (*NetResponse) FrameType() Type    { return TypeNetResponse }
func (*OpenURLRequest) FrameType() Type { return TypeOpenURLRequest }
func (*OpenURLResult) FrameType() Type  { return TypeOpenURLResult }
func (*HostEvent) FrameType() Type      { return TypeHostEvent }
func (*AppEvent) FrameType() Type       { return TypeAppEvent }

func (f *AppMessage) IDs() (string, string)     { return f.RequestID, f.InstanceID }
func (f *DBRequest) IDs() (string, string)      { return f.RequestID, f.InstanceID }
func (f *NetRequest) IDs() (string, string)     { return f.RequestID, f.InstanceID }
func (f *OpenURLRequest) IDs() (string, string) { return f.RequestID, f.InstanceID }
