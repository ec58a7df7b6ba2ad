package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/internal/failpoint"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// Timing of the waits before and after an input.
const (
	pollInterval   = 40 * time.Millisecond  // when no page change wakes a wait
	scrollSettle   = 50 * time.Millisecond  // a scroll position is read twice this far apart
	verifyInterval = 100 * time.Millisecond // between readings of a postcondition
)

// action is one action being performed: the request, what it acts on, and
// its result so far. Its methods run in the tab's queue slot.
type action struct {
	r      *Runtime
	ctx    context.Context // ends at the action's deadline
	l      *lease.Lease
	p      *page
	prov   Provider
	req    browser.ActionRequest
	a      browser.Action
	res    *browser.ActionResult
	frame  *sourceFrame // the child frame acted in, or nil
	target *target      // the element the ref names, or nil (navigate, a document scroll)
	bound  *target      // the element a state expectation names, bound before the input
}

// capabilityOf is the optional provider capability an action kind needs
// besides dom.read.v1, which every action needs.
var capabilityOf = map[string]string{
	browser.ActScroll:   browser.CapInputScroll,
	browser.ActWheel:    browser.CapInputWheel,
	browser.ActNavigate: browser.CapNavigate,
	browser.ActSelect:   browser.CapInputSelect,
	browser.ActDblclick: browser.CapInputPointer,
	browser.ActHover:    browser.CapInputPointer,
	browser.ActDrag:     browser.CapInputPointer,
	browser.ActChord:    browser.CapInputChord,
}

// performHeld is perform for a caller that holds the tab's queue slot (a
// batch holds one slot for all its steps). It always returns a result
// saying what happened.
func (r *Runtime) performHeld(ctx context.Context, l *lease.Lease, p *page, prov Provider, req browser.ActionRequest, res *browser.ActionResult) *browser.ActionResult {
	a := &action{r: r, ctx: ctx, l: l, p: p, prov: prov, req: req, a: req.Action, res: res}
	res.Dispatch = "notDispatched" // until an input is sent
	return boundSnapshot(a.perform())
}

// boundSnapshot drops a result's observation over browser.MaxSnapshotSize: the
// result then says QUEUE_FULL, unknown when input was sent, as the
// reference's does.
func boundSnapshot(res *browser.ActionResult) *browser.ActionResult {
	if res.Observation == nil || snapshotSize(res.Observation) <= browser.MaxSnapshotSize {
		return res
	}
	res.Observation, res.Postcondition, res.Code = nil, "unverified", wire.CodeQueueFull
	res.Outcome = "failed"
	switch res.Dispatch {
	case "dispatched", "observed":
		res.Outcome, res.Dispatch = "unknown", "dispatched"
	}
	return res
}

// perform checks, resolves, dispatches and verifies the action.
func (a *action) perform() *browser.ActionResult {
	prov := a.prov
	if need, ok := capabilityOf[a.a.Kind]; !prov.Capable(browser.CapDOMRead) || (ok && !prov.Capable(need)) {
		return a.refuse(wire.Err(wire.CodeUnsupportedCapability))
	}
	if err := a.resolve(); err != nil {
		return a.refuse(err)
	}
	if e := a.a.Expected; e != nil {
		if err := a.prepare(e); err != nil {
			return a.refuse(err)
		}
	}
	switch a.a.Kind {
	case browser.ActClick:
		return a.click()
	case browser.ActCheck:
		return a.check()
	case browser.ActFill, browser.ActType, browser.ActAppend:
		return a.text()
	case browser.ActPress:
		return a.press()
	case browser.ActScroll:
		return a.scroll()
	case browser.ActWheel:
		return a.wheel()
	case browser.ActNavigate:
		return a.navigate()
	case browser.ActSelect:
		return a.choose()
	case browser.ActDblclick:
		return a.dblclick()
	case browser.ActHover:
		return a.hover()
	case browser.ActClickAt:
		return a.clickAt()
	case browser.ActDrag:
		return a.drag()
	case browser.ActChord:
		return a.chord()
	}
	return a.refuse(wire.Err(wire.CodeInvalidRequest))
}

func (a *action) refuse(err error) *browser.ActionResult { return refuse(a.res, err) }

// resolve finds the frame and the element the action names. A ref from
// another document, or that the page has moved past, is STALE_TARGET; a
// frame's element named without its frame is INVALID_REQUEST; a region is
// a target only of scroll and wheel (NOT_ACTIONABLE).
func (a *action) resolve() error {
	if a.req.Frame != nil {
		if !a.prov.Capable(browser.CapFrameInput) {
			return wire.Err(wire.CodeUnsupportedCapability)
		}
		f, err := a.r.frameTarget(a.ctx, a.l, a.p, a.prov, a.req.Frame)
		if err != nil {
			return err
		}
		a.frame = &f
	}
	if a.a.Ref == "" {
		if a.req.DocumentEpoch != a.p.currentEpoch() {
			return wire.Err(wire.CodeStaleTarget)
		}
		return nil
	}
	t := a.p.resolve(a.a.Ref, a.req.DocumentEpoch, a.frame != nil)
	if t == nil {
		if a.frame == nil && a.p.frameRef(a.a.Ref) {
			return wire.Err(wire.CodeInvalidRequest) // a frame's element: the request must name the frame
		}
		return wire.Err(wire.CodeStaleTarget)
	}
	if t.region && a.a.Kind != browser.ActScroll && a.a.Kind != browser.ActWheel {
		return wire.Err(wire.CodeNotActionable)
	}
	a.target = t
	return nil
}

// prepare checks, before any input, that the expectation can be verified:
// a state expectation's element is bound (a ref of this document whose
// identity stands, whose predicate the broker can read); a value
// expectation's element has a value that may be read (never a password's).
func (a *action) prepare(e *browser.Expected) error {
	switch e.Kind {
	case browser.ExpectState:
		t := a.p.resolve(e.Ref, a.req.DocumentEpoch, false)
		if t == nil {
			return wire.Err(wire.CodeStaleTarget)
		}
		if _, err := a.identity(t); err != nil {
			return err
		}
		f, err := a.read(t)
		if err != nil {
			return err
		}
		if _, ok := statePredicate(e.State, f); !ok {
			return wire.Err(wire.CodeUnsupportedCapability)
		}
		a.bound = t
	case browser.ExpectValue:
		f, err := a.read(a.target)
		if err != nil {
			return err
		}
		if f.Password || f.Value == nil {
			return wire.Err(wire.CodeUnsupportedCapability) // a password is never read
		}
	}
	return nil
}

// read returns the facts of t (nil: the document), in the request's
// document: STALE_TARGET once that document is gone.
func (a *action) read(t *target) (*domFacts, error) {
	req := domRequest{DocumentEpoch: a.req.DocumentEpoch}
	if t != nil {
		req.BackendNodeID = t.BackendNodeID
	}
	if a.frame != nil {
		req.Frame = a.frame.document()
	}
	f, err := callDOMRead(a.ctx, a.prov, a.l, req)
	if err == nil && f.Found && !f.SameDocument {
		return nil, wire.Err(wire.CodeStaleTarget) // it moved to another document
	}
	return f, err
}

// identity re-reads t's accessibility node (see Runtime.identity).
func (a *action) identity(t *target) (axProps, error) { return a.r.identity(a.ctx, a.prov, a.l, t) }

// identity re-reads t's accessibility node: STALE_TARGET unless its role
// and name are those it was observed with. It returns the node's
// properties.
func (r *Runtime) identity(ctx context.Context, prov Provider, l *lease.Lease, t *target) (axProps, error) {
	n, err := r.axNodeOf(ctx, prov, l, t.BackendNodeID)
	if err != nil {
		return axProps{}, err
	}
	if n == nil || n.Ignored || n.Role != t.Role || n.Name != t.Name {
		return axProps{}, wire.Err(wire.CodeStaleTarget)
	}
	return n.Props, nil
}

// wait waits for a page change or the poll interval; false at the deadline.
func (a *action) wait(wake <-chan struct{}, interval time.Duration) bool {
	select {
	case <-wake:
	case <-time.After(interval):
	case <-a.ctx.Done():
		return false
	}
	return true
}

// ready waits, under the deadline, until the target is enabled and
// visible, and returns its facts (see readyOf).
func (a *action) ready() (*domFacts, error) { return a.readyOf(a.target) }

// readyOf waits, under the deadline, until t is enabled and visible, and
// returns its facts. A target that is gone is STALE_TARGET; one that never
// becomes ready is NOT_ACTIONABLE.
func (a *action) readyOf(t *target) (*domFacts, error) {
	for {
		wake := a.p.changes()
		f, err := a.read(t)
		if err != nil {
			return nil, a.notReady(err)
		}
		if !f.Found || !f.Connected {
			return nil, wire.Err(wire.CodeStaleTarget)
		}
		if !f.Disabled && f.Visible {
			return f, nil
		}
		if !a.wait(wake, pollInterval) {
			return nil, wire.Err(wire.CodeNotActionable)
		}
	}
}

// notReady is the error of a reading cut by the deadline while waiting for
// the target to become actionable: it never did, NOT_ACTIONABLE.
func (a *action) notReady(err error) error {
	if errors.Is(a.ctx.Err(), context.DeadlineExceeded) {
		return wire.Err(wire.CodeNotActionable)
	}
	return err
}

// command is the input command on the target.
func (a *action) command() inputCommand {
	cmd := inputCommand{DocumentEpoch: a.req.DocumentEpoch}
	if t := a.target; t != nil {
		cmd.Target = &inputTarget{BackendNodeID: t.BackendNodeID, Role: t.Role, Name: t.Name}
	}
	if a.frame != nil {
		cmd.Frame = a.frame.document()
	}
	return cmd
}

// send dispatches one fenced input. A refusal (PROVIDER.md) is reported
// not dispatched; any other error may have come after the input, and the
// outcome is unknown (never retried). It returns nil when the input was
// dispatched and the action goes on to its verification.
func (a *action) send(method string, cmd inputCommand) *browser.ActionResult {
	// The lease may have ended while the action waited (for the tab's queue,
	// stable geometry or a batch step's approval): no input under it.
	if _, err := a.r.leases.Get(a.l.Owner, a.l.ID); err != nil {
		return a.refuse(err)
	}
	err := callInput(a.ctx, a.prov, method, a.l, cmd)
	if err != nil {
		switch rpc.CodeOf(err) {
		case wire.CodeStaleTarget, wire.CodeNotActionable, wire.CodeLeaseRevoked, wire.CodePolicyDenied,
			wire.CodeInvalidRequest, wire.CodeUnsupportedCapability:
			return a.refuse(err) // refused before any input (PROVIDER.md)
		}
		return a.unknown(err)
	}
	failpoint.Hit("after-dispatch")
	a.res.Dispatch = "dispatched"
	return nil
}

// unknown fills the result of an input that may or may not have happened.
func (a *action) unknown(err error) *browser.ActionResult {
	a.res.Outcome, a.res.Dispatch, a.res.Postcondition, a.res.Code = "unknown", "dispatched", "unverified", rpc.CodeOf(err)
	return a.res
}

func (a *action) click() *browser.ActionResult {
	x, y, err := a.point()
	if err != nil {
		return a.refuse(err)
	}
	return a.pointer(browser.ProviderInputClick, x, y, nil)
}

// check sets a checkbox, switch or native radio button to the requested
// state with at most one click, once the accessibility tree and the DOM
// agree on its state; one already so gets no input.
func (a *action) check() *browser.ActionResult {
	want := *a.a.Checked
	t := a.target
	switch t.Role {
	case "checkbox", "switch", "radio":
	default:
		return a.refuse(wire.Err(wire.CodeUnsupportedCapability))
	}
	current, err := a.checked()
	if err != nil {
		return a.refuse(err)
	}
	f, err := a.read(t)
	if err != nil {
		return a.refuse(err)
	}
	if t.Role == "radio" && (f.Native != "radio" || !want) {
		return a.refuse(wire.Err(wire.CodeUnsupportedCapability)) // a radio is chosen, never unchosen
	}
	settled := func() (bool, bool, error) {
		c, err := a.checked()
		return c == want, true, err
	}
	if current == want {
		return a.verify(settled) // already so: no input
	}
	x, y, err := a.point()
	if err != nil {
		return a.refuse(err)
	}
	cmd := a.pointerCommand(x, y)
	cmd.ExpectChecked = current
	if res := a.send(browser.ProviderInputClick, cmd); res != nil {
		return res
	}
	return a.verify(settled)
}

// checked waits until the accessibility tree and the DOM agree on the
// target's checked state and returns it (true, false or "mixed"). A target
// with no checked state the broker can read is UNSUPPORTED_CAPABILITY.
func (a *action) checked() (any, error) {
	for {
		wake := a.p.changes()
		props, err := a.identity(a.target)
		if err != nil {
			return nil, err
		}
		f, err := a.read(a.target)
		if err != nil {
			return nil, err
		}
		if !f.Found || !f.Connected {
			return nil, wire.Err(wire.CodeStaleTarget)
		}
		if f.Checked == nil {
			return nil, wire.Err(wire.CodeUnsupportedCapability)
		}
		ax := map[string]any{"true": true, "false": false, "mixed": "mixed"}[props.Checked]
		if ax == f.Checked {
			return f.Checked, nil
		}
		if !a.wait(wake, pollInterval) {
			return nil, wire.Err(wire.CodeDeadlineExceeded) // they never agreed
		}
	}
}

// text fills, types or appends. The target must be an enabled, editable
// text field or contenteditable editing host (UNSUPPORTED_CAPABILITY
// otherwise, and for a password: its value is never read): a
// single-line field takes no line break, the result must fit maxlength
// (NOT_ACTIONABLE), and an append must keep the value it read as its
// prefix. The provider checks all of that again right before the input.
func (a *action) text() *browser.ActionResult {
	text := *a.a.Text
	f, err := a.ready()
	if err != nil {
		return a.refuse(err)
	}
	switch {
	case f.Editable == "" || f.Password || f.ReadOnly || (f.Editable == "host" && !f.HostBounded) || f.Value == nil:
		return a.refuse(wire.Err(wire.CodeUnsupportedCapability))
	case !f.Multiline && containsLineBreak(text):
		return a.refuse(wire.Err(wire.CodeUnsupportedCapability))
	}
	value := *f.Value
	final := text // what the field holds after a fill
	cmd := a.command()
	cmd.Text = &text
	switch a.a.Kind {
	case browser.ActFill:
		cmd.Mode = "replace"
		if f.MaxLength >= 0 && textLen(text) > f.MaxLength {
			return a.refuse(wire.Err(wire.CodeNotActionable))
		}
		if e := a.a.Expected; f.Editable == "host" && e != nil && e.Kind == browser.ExpectValue && *e.Value != text {
			return a.refuse(wire.Err(wire.CodeInvalidRequest)) // an editor's value is the text
		}
	case browser.ActType:
		cmd.Mode = "insert"
	case browser.ActAppend:
		cmd.Mode, cmd.Prefix, final = "append", &value, value+text
		if textLen(final) > browser.MaxActionText {
			return a.refuse(wire.Err(wire.CodeInvalidRequest))
		}
		if f.MaxLength >= 0 && textLen(final) > f.MaxLength {
			return a.refuse(wire.Err(wire.CodeNotActionable))
		}
		if e := a.a.Expected; e != nil && e.Kind == browser.ExpectValue && *e.Value != final {
			return a.refuse(wire.Err(wire.CodeInvalidRequest)) // the value expected must include the prefix
		}
	}
	// A fill with no other expectation, a fill of an editor and every
	// append are verified by the value they leave; a typed text's final
	// value is not known.
	var holds check
	if a.a.Kind == browser.ActAppend || (a.a.Kind == browser.ActFill && (a.a.Expected == nil || f.Editable == "host")) {
		holds = a.valueIs(final)
	}
	if a.a.Kind == browser.ActAppend && text == "" {
		return a.verify(holds) // nothing to add: verify only
	}
	if res := a.send(browser.ProviderInputText, cmd); res != nil {
		return res
	}
	return a.verify(holds)
}

func containsLineBreak(s string) bool {
	for _, r := range s {
		if r == '\r' || r == '\n' {
			return true
		}
	}
	return false
}

// valueIs checks that the target's value is want.
func (a *action) valueIs(want string) check {
	return func() (bool, bool, error) {
		f, err := a.read(a.target)
		if err != nil {
			return false, false, err
		}
		if !f.Found || !f.Connected || f.Value == nil {
			return false, false, wire.Err(wire.CodeStaleTarget)
		}
		return *f.Value == want, true, nil
	}
}

func (a *action) press() *browser.ActionResult {
	f, err := a.ready()
	if err != nil {
		return a.refuse(err)
	}
	if f.Password {
		return a.refuse(wire.Err(wire.CodeUnsupportedCapability))
	}
	cmd := a.command()
	cmd.Key, cmd.Shift = a.a.Key, a.a.Shift != nil && *a.a.Shift
	if res := a.send(browser.ProviderInputKey, cmd); res != nil {
		return res
	}
	return a.verify(nil)
}

// scroll scrolls the document, or exactly the element, by DOM scrollBy and
// reports the evidence: the positions before and after (read until two
// readings scrollSettle apart agree). It succeeds only when it moved the
// way it was asked; no movement is unverified.
func (a *action) scroll() *browser.ActionResult {
	var evidence browser.ScrollEvidence
	evidence.Target.Kind = "document"
	if a.target != nil {
		evidence.Target = browser.ScrollTarget{Kind: "element", Ref: a.a.Ref}
	}
	evidence.Requested = browser.ScrollDelta{DeltaX: *a.a.DeltaX, DeltaY: *a.a.DeltaY}
	f, err := a.read(a.target)
	if err != nil {
		return a.refuse(err)
	}
	if !f.Found || !f.Connected {
		return a.refuse(wire.Err(wire.CodeStaleTarget))
	}
	evidence.Before = *f.Scroll
	cmd := a.command()
	cmd.DeltaX, cmd.DeltaY = a.a.DeltaX, a.a.DeltaY
	if res := a.send(browser.ProviderInputScroll, cmd); res != nil {
		return res
	}
	after, err := a.settledScroll()
	if err != nil {
		return a.unknown(err)
	}
	evidence.After = after
	evidence.Moved = moved(evidence.Before, after)
	a.res.Scroll = &evidence
	if !movedAsRequested(evidence) {
		a.verify(nil) // an observation, but nothing to verify
		return a.res
	}
	stays := func() (bool, bool, error) {
		f, err := a.read(a.target)
		if err != nil {
			return false, false, err
		}
		if !f.Found || *f.Scroll != after {
			return false, false, wire.Err(wire.CodeStaleTarget) // it moved on during the verification
		}
		return true, true, nil
	}
	return a.verify(stays)
}

// settledScroll reads the scroll position until two readings scrollSettle
// apart agree.
func (a *action) settledScroll() (browser.ScrollPosition, error) {
	var last browser.ScrollPosition
	var since time.Time
	for {
		f, err := a.read(a.target)
		if err != nil {
			return last, err
		}
		if !f.Found {
			return last, wire.Err(wire.CodeStaleTarget)
		}
		now := time.Now()
		switch {
		case since.IsZero() || *f.Scroll != last:
			last, since = *f.Scroll, now
		case now.Sub(since) >= scrollSettle:
			return last, nil
		}
		select {
		case <-time.After(pollInterval):
		case <-a.ctx.Done():
			return last, wire.Err(wire.CodeDeadlineExceeded)
		}
	}
}

// moved: an offset changed by more than half a CSS pixel.
func moved(before, after browser.ScrollPosition) bool {
	return abs(after.X-before.X) > 0.5 || abs(after.Y-before.Y) > 0.5
}

// movedAsRequested: it moved, and on each axis either not at all or in the
// requested direction (offsets are signed: RTL layouts scroll negative).
func movedAsRequested(e browser.ScrollEvidence) bool {
	aligned := func(request int, actual float64) bool {
		return abs(actual) <= 0.5 || (request > 0 && actual > 0) || (request < 0 && actual < 0)
	}
	return e.Moved && aligned(e.Requested.DeltaX, e.After.X-e.Before.X) && aligned(e.Requested.DeltaY, e.After.Y-e.Before.Y)
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// wheel sends one wheel sample at a verified point of the target. It claims
// no movement: only an expectation verifies it.
func (a *action) wheel() *browser.ActionResult {
	x, y, err := a.point()
	if err != nil {
		return a.refuse(err)
	}
	cmd := a.pointerCommand(x, y)
	cmd.DeltaX, cmd.DeltaY = a.a.DeltaX, a.a.DeltaY
	if res := a.send(browser.ProviderInputWheel, cmd); res != nil {
		return res
	}
	return a.verify(nil)
}

// navigate sends the tab to a credential-free HTTP(S) URL. An origin lease
// stays on its origin (POLICY_DENIED); a tab lease may go anywhere HTTP(S)
// and keeps its authority. The result waits for the new document to be
// current and interactive, and verifies the expectation. Without one, a
// navigation that loads a document is verified by that document loading,
// wherever it landed (past the reference, whose default is the URL asked
// for: a server's redirect, or a router that adds "#/" as the page starts,
// never showed it); its observation says the URL. One within the document
// (a fragment) is verified by the URL as the browser writes it.
func (a *action) navigate() *browser.ActionResult {
	u, err := url.Parse(a.a.URL)
	origin, ok := httpOrigin(a.a.URL)
	if err != nil || !ok || u.Opaque != "" {
		return a.refuse(wire.Err(wire.CodePolicyDenied))
	}
	if a.l.Scope == lease.ScopeOrigin && origin != a.l.Origin {
		return a.refuse(wire.Err(wire.CodePolicyDenied))
	}
	n, err := callNavigate(a.ctx, a.prov, a.l, navigateRequest{DocumentEpoch: a.req.DocumentEpoch, URL: a.a.URL})
	if err != nil {
		switch rpc.CodeOf(err) {
		case wire.CodeNavigationFailed:
			a.res.Outcome, a.res.Dispatch, a.res.Postcondition, a.res.Code = "failed", "dispatched", "unverified", wire.CodeNavigationFailed
			return a.res
		case wire.CodeStaleTarget, wire.CodeLeaseRevoked, wire.CodePolicyDenied, wire.CodeInvalidRequest:
			return a.refuse(err)
		}
		return a.unknown(err)
	}
	failpoint.Hit("after-dispatch")
	a.res.Dispatch = "dispatched"
	if a.a.Expected == nil && n.LoaderID == "" {
		a.a.Expected = &browser.Expected{Kind: browser.ExpectURL, URL: n.URL}
	}
	loaded := func() (bool, bool, error) {
		frame, ready, err := a.mainDocument()
		if err != nil {
			return false, false, err
		}
		return (n.LoaderID == "" || frame.LoaderID == n.LoaderID) && ready, false, nil
	}
	return a.verify(loaded)
}

// choose selects the option of a <select> labelled a.a.Option, or whose
// value is a.a.Value (capability broker.select-option.v1, beyond the
// reference): exactly one enabled option must match (none or a disabled
// one: NOT_ACTIONABLE; more: AMBIGUOUS_TARGET). One already selected gets
// no input; otherwise the provider selects it, after checking it still has
// that label (and value), and fires input and change, as a person's choice
// does. Verified by the selection it leaves.
func (a *action) choose() *browser.ActionResult {
	f, err := a.ready()
	if err != nil {
		return a.refuse(err)
	}
	if f.Select == nil || f.Select.Multiple {
		return a.refuse(wire.Err(wire.CodeUnsupportedCapability))
	}
	matches := func(o optionFacts) bool {
		if a.a.Value != nil {
			return o.Value == *a.a.Value
		}
		return o.Label == *a.a.Option
	}
	index := -1
	for i, o := range f.Select.Options {
		if !matches(o) {
			continue
		}
		if index >= 0 {
			return a.refuse(wire.Err(wire.CodeAmbiguousTarget))
		}
		index = i
	}
	if index < 0 || f.Select.Options[index].Disabled {
		return a.refuse(wire.Err(wire.CodeNotActionable))
	}
	label := f.Select.Options[index].Label
	chosen := func() (bool, bool, error) {
		f, err := a.read(a.target)
		if err != nil {
			return false, false, err
		}
		if !f.Found || f.Select == nil || index >= len(f.Select.Options) {
			return false, false, wire.Err(wire.CodeStaleTarget)
		}
		o := f.Select.Options[index]
		return o.Selected && o.Label == label && matches(o), true, nil
	}
	if f.Select.Options[index].Selected {
		return a.verify(chosen) // already chosen: no input
	}
	cmd := a.command()
	cmd.Option = &optionChoice{Index: index, Label: label, Value: a.a.Value}
	if res := a.send(browser.ProviderInputSelect, cmd); res != nil {
		return res
	}
	return a.verify(chosen)
}

// mainDocument reads the main frame (its loader and URL, with its fragment)
// and whether it is interactive or complete.
func (a *action) mainDocument() (mainFrame, bool, error) {
	var tree struct {
		FrameTree struct {
			Frame mainFrame `json:"frame"`
		} `json:"frameTree"`
	}
	raw, err := callCDP(a.ctx, a.prov, a.l, "Page.getFrameTree", map[string]any{})
	if err != nil {
		return mainFrame{}, false, err
	}
	if err := json.Unmarshal(raw, &tree); err != nil {
		return mainFrame{}, false, providerErr("cdp Page.getFrameTree", err)
	}
	var state struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	raw, err = callCDP(a.ctx, a.prov, a.l, "Runtime.evaluate", map[string]any{"expression": "document.readyState", "returnByValue": true})
	if err != nil {
		return mainFrame{}, false, err
	}
	if err := json.Unmarshal(raw, &state); err != nil {
		return mainFrame{}, false, providerErr("cdp Runtime.evaluate", err)
	}
	ready := state.Result.Value == "interactive" || state.Result.Value == "complete"
	return tree.FrameTree.Frame, ready, nil
}

type mainFrame struct {
	LoaderID    string `json:"loaderId"`
	URL         string `json:"url"`
	URLFragment string `json:"urlFragment"`
}
