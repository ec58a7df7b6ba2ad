package browser

import (
	"time"

	"github.com/dsh-browser/broker/wire"
)

// Action limits.
const (
	DefaultActionTimeout = 10 * time.Second
	MaxActionTimeout     = 30 * time.Second
	MaxActionText        = 10_000
	MaxExpectedText      = 2_000
)

// NamedKeys are the keys press accepts.
var NamedKeys = map[string]bool{
	"Enter": true, "Tab": true, "Escape": true, "Space": true,
	"ArrowUp": true, "ArrowDown": true, "ArrowLeft": true, "ArrowRight": true,
	"Home": true, "End": true, "PageUp": true, "PageDown": true, "Backspace": true, "Delete": true,
}

// Action is one input: click, fill, type, append or press.
type Action struct {
	Kind     string    `json:"kind" enum:"click,fill,type,append,press"`
	Ref      string    `json:"ref" len:"1,128"`
	Text     *string   `json:"text,omitempty" len:",10000"`                                                                                                  // fill, type, append
	Key      string    `json:"key,omitempty" enum:"Enter,Tab,Escape,Space,ArrowUp,ArrowDown,ArrowLeft,ArrowRight,Home,End,PageUp,PageDown,Backspace,Delete"` // press
	Shift    *bool     `json:"shift,omitempty"`                                                                                                              // press
	Expected *Expected `json:"expected,omitempty"`
}

// Expected is a postcondition checked after the action: the page's text
// contains Text (whitespace-collapsed).
type Expected struct {
	Kind string `json:"kind" enum:"text"`
	Text string `json:"text" len:"1,2000"`
}

// ActionRequest is the request of browser.act.
type ActionRequest struct {
	RequestID     string `json:"requestId" len:"1,128"`
	LeaseID       string `json:"leaseId" len:"1,256"`
	DocumentEpoch string `json:"documentEpoch" len:"1,512"`
	Action        Action `json:"action"`
	TimeoutMs     *int   `json:"timeoutMs,omitempty" range:"1,30000"`
	// Frame acts in a same-origin child frame, on a ref from that frame's
	// observation; DocumentEpoch is then the frame's.
	Frame *FrameSelector `json:"frame,omitempty"`
}

// ActionResult is the value of browser.act.
type ActionResult struct {
	RequestID     string       `json:"requestId"`
	Outcome       string       `json:"outcome"`       // succeeded, failed, cancelled, unknown
	Dispatch      string       `json:"dispatch"`      // notDispatched, dispatched, observed
	Postcondition string       `json:"postcondition"` // passed, failed, unverified
	Code          wire.Code    `json:"code,omitempty"`
	Observation   *Observation `json:"observation,omitempty"`
	Recovery      *Recovery    `json:"recovery,omitempty"`
}

// ActParams is the params of browser.act.
type ActParams struct {
	SessionID string        `json:"sessionId" len:"1,256"`
	Request   ActionRequest `json:"request"`
}

// Recovery describes an earlier execution of a retried action whose result
// is no longer available: it may have happened, and is never replayed.
type Recovery struct {
	State        string    `json:"state"` // reserved: intent recorded, outcome never recorded; settled: completed
	RecordedAt   time.Time `json:"recordedAt"`
	Dispatch     string    `json:"dispatch"` // what is known of the input
	PriorOutcome string    `json:"priorOutcome,omitempty"`
}
