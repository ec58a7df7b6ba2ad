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
	MaxURL               = 8_192  // navigate's url and a url expectation, UTF-16 units
	MaxScrollDelta       = 10_000 // |deltaX|, |deltaY| of scroll, wheel and drag, CSS pixels
	MaxOptionLabel       = MaxNameLength
	MaxOptionValue       = MaxNameLength
	MaxPointOffset       = 10_000 // x, y of clickAt: CSS pixels from the element's top-left corner
)

// NamedKeyList are the keys press accepts, and chord besides single
// characters, in the order a person lists them; NamedKeys is the same set.
var NamedKeyList = []string{
	"Enter", "Tab", "Escape", "Space", "Backspace", "Delete",
	"ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End", "PageUp", "PageDown",
}

// NamedKeys are the keys of NamedKeyList, to look one up.
var NamedKeys = func() map[string]bool {
	m := make(map[string]bool, len(NamedKeyList))
	for _, k := range NamedKeyList {
		m[k] = true
	}
	return m
}()

// Modifiers are the modifier keys a chord may hold, in the order they go
// down.
var Modifiers = []string{"Alt", "Control", "Meta", "Shift"}

// Action kinds. type inserts at the caret and select (capability
// [CapSelectOption]) chooses an option of a <select>; these and the pointer
// and keyboard vocabulary after them are ours, each under its capability:
// the reference has none of them.
const (
	ActCheck    = "check"
	ActClick    = "click"
	ActFill     = "fill"
	ActType     = "type"
	ActAppend   = "append"
	ActPress    = "press"
	ActScroll   = "scroll"
	ActWheel    = "wheel"
	ActNavigate = "navigate"
	ActSelect   = "select"
	ActDblclick = "dblclick" // [CapDblclick]
	ActHover    = "hover"    // [CapHover]
	ActChord    = "chord"    // [CapKeyChord]
	ActDrag     = "drag"     // [CapDrag]
	ActClickAt  = "clickAt"  // [CapClickAt]
)

// Expectation kinds.
const (
	ExpectValue = "value"
	ExpectURL   = "url"
	ExpectText  = "text"
	ExpectState = "state"
)

// ElementStates are the predicates of a state expectation.
var ElementStates = []string{"attached", "detached", "visible", "hidden", "enabled", "disabled", "checked", "unchecked"}

// Action is one input. Which fields go with which kind is in [ParseAct]
// and, for clients, in the published schema (one shape per kind):
//
//	check    {ref, checked}          checkbox, switch, or a native radio with checked:true
//	click    {ref}
//	fill     {ref, text}             replace the value of a field or editing host
//	type     {ref, text}             insert at the caret
//	append   {ref, text}             add to the end of the value
//	press    {ref, key, shift?}      one named key
//	scroll   {ref?, deltaX, deltaY}  the document, or exactly the element
//	wheel    {ref, deltaX, deltaY}   one wheel sample at a verified point
//	navigate {url}                   a credential-free HTTP(S) URL
//	select   {ref, option}           the option of a <select> labelled option
//	select   {ref, value}            the option of a <select> whose value is value
//	dblclick {ref}                   two clicks at the centre, as one double-click
//	hover    {ref}                   the pointer moves onto the centre
//	chord    {ref, key, modifiers}   one key (named, or one character) with modifiers held
//	drag     {ref, toRef}            press on ref, move onto toRef, release there
//	drag     {ref, deltaX, deltaY}   press on ref, move by the offset, release there
//	clickAt  {ref, x, y}             a click at (x, y) of the element's box, from its top-left
type Action struct {
	Kind      string    `json:"kind"`
	Ref       string    `json:"ref,omitempty"`
	Text      *string   `json:"text,omitempty"`
	Key       string    `json:"key,omitempty"`
	Shift     *bool     `json:"shift,omitempty"`
	Modifiers []string  `json:"modifiers,omitzero"` // a chord's, [] too
	Checked   *bool     `json:"checked,omitempty"`
	DeltaX    *int      `json:"deltaX,omitempty"`
	DeltaY    *int      `json:"deltaY,omitempty"`
	ToRef     string    `json:"toRef,omitempty"`
	X         *int      `json:"x,omitempty"`
	Y         *int      `json:"y,omitempty"`
	URL       string    `json:"url,omitempty"`
	Option    *string   `json:"option,omitempty"`
	Value     *string   `json:"value,omitempty"`
	Expected  *Expected `json:"expected,omitempty"`
}

// Expected is a postcondition checked after the action:
//
//	value {value}       the target element's .value is exactly value (never a password's)
//	url   {url}         the tab shows exactly url, readyState interactive or complete
//	text  {text}        the page's text contains text (whitespace-collapsed)
//	state {ref, state}  the element ref, bound before the input, is in state
//	                    before and after the result's observation
type Expected struct {
	Kind  string  `json:"kind"`
	Value *string `json:"value,omitempty"`
	URL   string  `json:"url,omitempty"`
	Text  string  `json:"text,omitempty"`
	Ref   string  `json:"ref,omitempty"`
	State string  `json:"state,omitempty"`
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
	// Since is the cursor of the observation the client acted on (a client
	// that lists [CapActionDelta]): the result then says what changed
	// since, in Change, when that is smaller than the whole page.
	Since string `json:"since,omitempty" len:"1,128"`
}

// ActionResult is the value of browser.act.
type ActionResult struct {
	RequestID     string       `json:"requestId"`
	Outcome       string       `json:"outcome"`       // succeeded, failed, cancelled, unknown
	Dispatch      string       `json:"dispatch"`      // notDispatched, dispatched, observed
	Postcondition string       `json:"postcondition"` // passed, failed, unverified
	Code          wire.Code    `json:"code,omitempty"`
	Observation   *Observation `json:"observation,omitempty"`
	// Change replaces Observation for a request with Since whose baseline
	// is still known, of the same document and scope, when the delta is
	// smaller: apply it to that observation to get the page now.
	Change   *ObservationDelta `json:"change,omitempty"`
	Scroll   *ScrollEvidence   `json:"scroll,omitempty"`
	Recovery *Recovery         `json:"recovery,omitempty"`
	// CoveredBy names what would have received the input instead of the
	// target, when the action was refused NOT_ACTIONABLE for it (ours).
	CoveredBy *Cover `json:"coveredBy,omitempty"`
}

// Cover is the element that covers an action's target at the point the
// input would land: a modal, a banner, another control. Tag is its element
// name ("iframe" for the content of another frame, which is never read);
// Role and Name are its accessibility role and name when it has them (a
// name is cut at MaxCoverName); Ref is set when it is an element an
// observation would give a ref, usable in the next action.
type Cover struct {
	Tag  string `json:"tag"`
	Role string `json:"role,omitempty"`
	Name string `json:"name,omitempty"`
	Ref  string `json:"ref,omitempty"`
}

// MaxCoverName bounds a cover's name, in UTF-16 units.
const MaxCoverName = 200

// ActParams is the params of browser.act.
type ActParams struct {
	SessionID string        `json:"sessionId" len:"1,256"`
	Request   ActionRequest `json:"request"`
}

// Recovery describes an earlier execution of a retried action whose result
// is no longer available: it may have happened, and is never replayed.
type Recovery struct {
	State        string `json:"state"`      // reserved: intent recorded, outcome never recorded; settled: completed
	RecordedAt   int64  `json:"recordedAt"` // ms since the Unix epoch
	Dispatch     string `json:"dispatch"`   // notDispatched or dispatched: what is known of the input
	PriorOutcome string `json:"priorOutcome,omitempty"`
}

// ScrollEvidence is what a scroll did: the target, the request, and the
// scroll positions before and after (each read until stable).
type ScrollEvidence struct {
	Target    ScrollTarget   `json:"target"`
	Requested ScrollDelta    `json:"requested"`
	Before    ScrollPosition `json:"before"`
	After     ScrollPosition `json:"after"`
	// Moved: either offset changed by more than half a CSS pixel.
	Moved bool `json:"moved"`
}

// ScrollTarget is {kind:"document"} or {kind:"element", ref}.
type ScrollTarget struct {
	Kind string `json:"kind"`
	Ref  string `json:"ref,omitempty"`
}

// ScrollDelta is a scroll's requested movement in CSS pixels.
type ScrollDelta struct {
	DeltaX int `json:"deltaX"`
	DeltaY int `json:"deltaY"`
}

// ScrollPosition is a scroller's offsets (signed: RTL layouts scroll to
// negative x) and sizes, in CSS pixels.
type ScrollPosition struct {
	X            float64 `json:"x"`
	Y            float64 `json:"y"`
	ScrollWidth  float64 `json:"scrollWidth"`
	ScrollHeight float64 `json:"scrollHeight"`
	ClientWidth  float64 `json:"clientWidth"`
	ClientHeight float64 `json:"clientHeight"`
}
