package frame

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// NewInstanceID returns a fresh instanceId: "ins-" and 128 random bits in
// hex. The host mints it (R4); it is unguessable, so one app cannot address
// another's instance.
func NewInstanceID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return "ins-" + hex.EncodeToString(b[:])
}

// Instance is the host side of one app iframe, the event.source the runner
// routes by (R4), across the loads of its document. It holds the current
// instanceId, minted by the host and sent in host-ready, and the requests
// in flight under it, and applies the frame rules to each frame the iframe
// sends (see [Instance.Receive]).
//
// Every frame for the iframe goes out through send, called in wire order
// with the Instance's lock held: send must not block for long nor call back
// into the Instance. An Instance is safe for concurrent use.
type Instance struct {
	send func(frame []byte)

	mu        sync.Mutex // guards the fields below
	id        string
	ready     HostReady // the host-ready template; its InstanceID is id
	announced bool      // an announce arrived since the last load
	closed    bool
	pending   map[string]*Pending // in flight, by requestId
	accepted  uint64              // requests accepted, for their order
	answered  idWindow            // requestIds this instanceId answered
}

// NewInstance returns the state of a new app iframe. ready is the host-ready
// it sends (its InstanceID is filled in); it must encode. Call
// [Instance.Load] when the app document loads.
func NewInstance(ready HostReady, send func(frame []byte)) (*Instance, error) {
	ready.InstanceID = NewInstanceID()
	if _, err := Encode(&ready); err != nil {
		return nil, fmt.Errorf("snug instance: the host-ready template: %w", err)
	}
	return &Instance{
		send:     send,
		id:       ready.InstanceID,
		ready:    ready,
		pending:  map[string]*Pending{},
		answered: idWindow{max: RememberedRequestIDs},
	}, nil
}

// ID returns the current instanceId.
func (in *Instance) ID() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.id
}

// Inbound is an accepted frame from the app.
type Inbound struct {
	// Frame is the frame: *AppAnnounce (already acknowledged with
	// host-ready), *AppMessage, *DBRequest, *NetRequest, *OpenURLRequest,
	// *AppCancel (already applied) or *AppEvent.
	Frame Frame
	// Request is set for a request frame: the host does the work and
	// answers through it.
	Request *Pending
}

// Load applies a (re)load of the app document: every request in flight
// ends SUPERSEDED, a new instanceId is minted, and host-ready is sent.
// The host calls it on every load, the first included, and after the
// explicit user reset that the parse-failure budget requires.
func (in *Instance) Load() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return ErrClosed
	}
	in.supersede("the app document was reloaded")
	in.rotate()
	in.announced = false
	in.sendReady()
	return nil
}

// Close ends every request in flight SUPERSEDED; nothing is sent after.
func (in *Instance) Close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.closed {
		in.supersede("the app was closed")
		in.closed = true
	}
}

// Receive applies the frame rules to one raw frame from this iframe:
//
//   - R1/R6: a rejected frame ([*Error]) is answered on the wire when
//     [Error.Answer] has an answer and its requestId is not in flight (that
//     one's only terminal answer stays its own, R3);
//   - R2: [ErrIgnored] for anything that is not a frame the app sends;
//   - R4: app-announce is acknowledged with host-ready; a second announce
//     since the last load first ends every request in flight SUPERSEDED and
//     mints a new instanceId. A request or cancel for another instanceId
//     is dropped ([ErrStale]). A requestId is unique per instance
//     ([ErrDuplicate]), and each kind has a cap in flight ([ErrBusy]);
//   - app-cancel ends the named app-message CANCELLED. Other requests are
//     not cancelled: a db write or a net send may already have happened,
//     and their own answer says what did.
//
// On error, whatever answer the rules require has been sent.
func (in *Instance) Receive(ctx context.Context, raw []byte) (Inbound, error) {
	f, err := Parse(raw)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return Inbound{}, ErrClosed
	}
	if err != nil {
		if e, ok := errors.AsType[*Error](err); ok && in.pending[e.RequestID] == nil {
			if answer, ok := e.Answer(); ok {
				in.send(answer)
			}
		}
		return Inbound{}, err
	}
	if !f.FrameType().FromApp() {
		return Inbound{}, fmt.Errorf("%w: %s is a host frame", ErrIgnored, f.FrameType())
	}
	switch f := f.(type) {
	case *AppAnnounce:
		if in.announced {
			in.supersede("the app announced itself again")
			in.rotate()
		}
		in.announced = true
		in.sendReady()
	case *AppCancel:
		if f.InstanceID != in.id {
			return Inbound{}, ErrStale
		}
		if p := in.pending[f.RequestID]; p != nil && p.req.FrameType() == TypeAppMessage {
			p.end(ResponseError{Code: CodeCancelled, Message: "cancelled by the app"})
		}
	case Request:
		return in.accept(ctx, f)
	}
	return Inbound{Frame: f}, nil
}

func (in *Instance) accept(ctx context.Context, req Request) (Inbound, error) {
	id, instanceID := req.IDs()
	t := req.FrameType()
	if instanceID != in.id {
		return Inbound{}, ErrStale
	}
	if in.pending[id] != nil {
		return Inbound{}, ErrDuplicate
	}
	if in.answered.has(id) {
		in.sendError(t, id, ResponseError{Code: CodeHostError, Message: "requestId " + id + " was already used by this instance"})
		return Inbound{}, ErrDuplicate
	}
	limit, inFlight := MaxInFlight, 0
	if t == TypeOpenURLRequest {
		limit = MaxPendingOpenURL
	}
	for _, p := range in.pending {
		if p.req.FrameType() == t {
			inFlight++
		}
	}
	if inFlight >= limit {
		msg := fmt.Sprintf("too many %s frames in flight (at most %d)", t, limit)
		if t == TypeOpenURLRequest {
			msg = "an open-url request is already waiting on the user"
		}
		in.sendError(t, id, ResponseError{Code: CodeHostError, Message: msg, Retryable: true})
		return Inbound{}, ErrBusy
	}
	p := &Pending{in: in, req: req, order: in.accepted}
	p.ctx, p.cancel = context.WithCancel(ctx)
	in.accepted++
	in.pending[id] = p
	return Inbound{Frame: req, Request: p}, nil
}

// SetTheme changes the theme of later host-ready frames and, when it
// changed, tells the app with a theme-change hint.
func (in *Instance) SetTheme(theme Theme) error {
	if theme != ThemeLight && theme != ThemeDark {
		return fmt.Errorf("snug instance: unknown theme %q", theme)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if theme == in.ready.Theme {
		return nil
	}
	in.ready.Theme = theme
	h, err := NewHint("theme-change", map[string]HintValue{"theme": Ref(theme)})
	if err != nil {
		return err
	}
	return in.notify(h)
}

// Notify sends a hint (R7).
func (in *Instance) Notify(h Hint) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.notify(h)
}

func (in *Instance) notify(h Hint) error {
	if in.closed {
		return ErrClosed
	}
	data, err := Encode(h)
	if err != nil {
		return err
	}
	in.send(data)
	return nil
}

// The methods below run with in.mu held.

func (in *Instance) rotate() {
	in.id = NewInstanceID()
	in.ready.InstanceID = in.id
	in.answered.reset()
}

func (in *Instance) sendReady() {
	data, err := Encode(&in.ready)
	if err != nil {
		panic("snug instance: host-ready stopped encoding: " + err.Error()) // checked by NewInstance
	}
	in.send(data)
}

// supersede ends every request in flight SUPERSEDED, in the order they
// were accepted.
func (in *Instance) supersede(why string) {
	ps := make([]*Pending, 0, len(in.pending))
	for _, p := range in.pending {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *Pending) int { return cmp.Compare(a.order, b.order) })
	for _, p := range ps {
		p.end(ResponseError{Code: CodeSuperseded, Message: "superseded: " + why})
	}
}

// sendError sends the error answer to a request that was not accepted.
func (in *Instance) sendError(t Type, id string, e ResponseError) {
	if data, err := Encode(errorAnswer(t, id, e)); err == nil {
		in.send(data)
	}
}

// Pending is one accepted request. It gets exactly one terminal answer
// (R3): the first of [Pending.Respond], [Pending.Fail] and [Pending.Close]
// sends it, unless a cancel or supersede ended it first; after that they
// send nothing and return [ErrClosed].
type Pending struct {
	in     *Instance
	req    Request
	order  uint64
	ctx    context.Context
	cancel context.CancelFunc

	// guarded by in.mu
	done     bool
	text     string // the cumulative streaming text
	nextSeq  int64
	overflow bool // text outgrew a frame; later streaming frames are skipped
}

// Request is the accepted request frame.
func (p *Pending) Request() Request { return p.req }

// Context is done once the request has ended: answered, cancelled by the
// app, superseded, or closed. Work for the request stops then.
func (p *Pending) Context() context.Context { return p.ctx }

// Stream appends delta to the reply text of an app-message and sends the
// text so far as a streaming app-response: cumulative, display-provisional
// and numbered by seq (R3). A streaming frame that would outgrow
// MaxFrameBytes is skipped (and so are the rest): the terminal frame is the
// authoritative one.
func (p *Pending) Stream(delta string) error {
	if p.req.FrameType() != TypeAppMessage {
		return fmt.Errorf("snug request: a %s does not stream", p.req.FrameType())
	}
	p.in.mu.Lock()
	defer p.in.mu.Unlock()
	if p.done || p.in.closed {
		return ErrClosed
	}
	seq := p.nextSeq
	p.nextSeq++
	if !p.overflow {
		p.text += delta
		p.overflow = len(p.text) > MaxFrameBytes
	}
	if p.overflow {
		return fmt.Errorf("snug request: streaming frame skipped: %w", ErrTooLarge)
	}
	id, _ := p.req.IDs()
	data, err := Encode(&AppResponse{RequestID: id, OK: true, Streaming: true, Text: p.text, Seq: &seq})
	if err != nil {
		return fmt.Errorf("snug request: streaming frame skipped: %w", err)
	}
	p.in.send(data)
	return nil
}

// Respond ends the request with answer: for an app-message a final
// *AppResponse (OK, Data), or an error one; for a db-request a
// *DBResponse; for a net-request a *NetResponse; for an open-url request an
// *OpenURLResult. Its RequestID is filled in.
//
// Respond always ends the request. When answer cannot be sent as it is, an
// error answer goes in its place and the returned error says why: an
// over-size net-response becomes NET_SIZE_EXCEEDED (R6), any other
// over-size or invalid answer HOST_ERROR.
func (p *Pending) Respond(answer Frame) error {
	p.in.mu.Lock()
	defer p.in.mu.Unlock()
	if p.done || p.in.closed {
		return ErrClosed
	}
	return p.finish(answer)
}

// Fail ends the request with the error e, in the error shape of its answer
// type (an open-url request is refused, e naming the reason). The message
// is clamped to MaxErrorMessageChars.
func (p *Pending) Fail(e ResponseError) error {
	p.in.mu.Lock()
	defer p.in.mu.Unlock()
	if p.done || p.in.closed {
		return ErrClosed
	}
	id, _ := p.req.IDs()
	return p.finish(errorAnswer(p.req.FrameType(), id, e))
}

// Close ends the request with HOST_ERROR (retryable) unless it has already
// ended. Defer it where the work starts, so that a request whose handler
// returns without answering still gets its terminal answer (R3).
func (p *Pending) Close() {
	p.in.mu.Lock()
	defer p.in.mu.Unlock()
	if !p.done && !p.in.closed {
		p.end(ResponseError{Code: CodeHostError, Message: "the host finished without an answer", Retryable: true})
	}
}

// end sends the error answer e, non-retryable unless e says so.
func (p *Pending) end(e ResponseError) {
	id, _ := p.req.IDs()
	p.finish(errorAnswer(p.req.FrameType(), id, e))
}

// finish sends the terminal answer, or the error answer that replaces it,
// and retires the request.
func (p *Pending) finish(answer Frame) error {
	id, _ := p.req.IDs()
	data, err := p.encodeAnswer(id, answer)
	if err != nil {
		code := CodeHostError
		if p.req.FrameType() == TypeNetRequest && errors.Is(err, ErrTooLarge) {
			code = CodeNetSizeExceeded
		}
		data, _ = Encode(errorAnswer(p.req.FrameType(), id, ResponseError{Code: code, Message: "the answer could not be sent: " + err.Error()}))
	}
	p.in.send(data)
	p.done = true
	delete(p.in.pending, id)
	p.in.answered.add(id)
	p.cancel()
	return err
}

// encodeAnswer checks that answer is a terminal answer of the right type
// and encodes it for requestId id.
func (p *Pending) encodeAnswer(id string, answer Frame) ([]byte, error) {
	want := p.req.FrameType().answerType()
	if isNil(answer) || answer.FrameType() != want {
		return nil, fmt.Errorf("snug request: a %s is answered by a %s", p.req.FrameType(), want)
	}
	switch a := answer.(type) {
	case *AppResponse:
		if a.OK && a.Streaming {
			return nil, errors.New("snug request: a streaming app-response is not terminal (use Stream)")
		}
		c := *a
		c.RequestID = id
		return Encode(&c)
	case *DBResponse:
		c := *a
		c.RequestID = id
		return Encode(&c)
	case *NetResponse:
		c := *a
		c.RequestID = id
		return Encode(&c)
	case *OpenURLResult:
		c := *a
		c.RequestID = id
		return Encode(&c)
	}
	return nil, fmt.Errorf("snug request: cannot answer with %T", answer)
}

// idWindow remembers the last max ids added.
type idWindow struct {
	max  int
	set  map[string]struct{}
	ring []string
	head int // the oldest entry once ring is full
}

func (w *idWindow) has(id string) bool { _, ok := w.set[id]; return ok }

func (w *idWindow) add(id string) {
	if w.set == nil {
		w.set = map[string]struct{}{}
	}
	if w.has(id) {
		return
	}
	if len(w.ring) < w.max {
		w.ring = append(w.ring, id)
	} else {
		delete(w.set, w.ring[w.head])
		w.ring[w.head] = id
		w.head = (w.head + 1) % w.max
	}
	w.set[id] = struct{}{}
}

func (w *idWindow) reset() { *w = idWindow{max: w.max} }
