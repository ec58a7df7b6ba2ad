// Package rpc runs one v1 peer connection: it reads and writes framed
// envelopes, dispatches incoming requests to a [Handler], matches responses to
// outgoing calls, and enforces the per-connection rules of the protocol.
//
// # Rules
//
//   - Every accepted incoming transport ID is remembered for the connection's
//     life. A reused ID closes the connection without dispatching; reaching
//     [Limits.MaxSeenIDs] closes it rather than forgetting an ID. In ordered
//     mode ([Conn.OrderIncoming]) IDs must increase instead, and the highest
//     one is all there is to remember.
//   - At most [Limits.MaxInFlight] requests run per direction. Excess incoming
//     requests are answered QUEUE_FULL at once; excess outgoing calls fail
//     locally with QUEUE_FULL.
//   - A cancel envelope aborts the named request's handler, which is then
//     answered CANCELLED. Replies with no pending caller are ignored.
//   - A malformed frame or envelope closes the connection; pending callers get
//     CONNECTION_LOST.
//   - A peer that closes its write side (a clean EOF between frames) has
//     half-closed: its pending outgoing calls fail CONNECTION_LOST (it can no
//     longer answer), [Conn.HalfClosed] is closed so handlers of writing
//     requests can stop, and the requests already read are still answered
//     before the connection closes.
//   - Output is queued to one writer. An envelope that would take the queue
//     past [Limits.MaxBuffered] bytes is not queued: a call fails with
//     QUEUE_FULL, and a response or event closes the connection, because a
//     peer that stopped reading cannot be answered truthfully any more.
package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/wire"
)

// Limits are the per-connection budgets. The zero value of a field means the
// protocol's default.
type Limits struct {
	MaxInFlight int // per direction; default 32
	MaxSeenIDs  int // remembered incoming transport IDs; default 10,000
	MaxBuffered int // queued output bytes; default 2 MiB
}

// Protocol defaults.
const (
	DefaultMaxInFlight = 32
	DefaultMaxSeenIDs  = 10_000
	DefaultMaxBuffered = 2 << 20
	// DrainTimeout bounds how long a half-closed peer's requests may take.
	DrainTimeout = 15 * time.Second
)

func (l Limits) withDefaults() Limits {
	if l.MaxInFlight == 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.MaxSeenIDs == 0 {
		l.MaxSeenIDs = DefaultMaxSeenIDs
	}
	if l.MaxBuffered == 0 {
		l.MaxBuffered = DefaultMaxBuffered
	}
	return l
}

// Handler serves incoming requests and events.
type Handler interface {
	// Handle runs one request and returns its value (nil for void) or an
	// error; a *wire.Error chooses the code, anything else is INTERNAL_ERROR.
	// ctx is cancelled when the peer cancels the request or the connection
	// closes. Handle runs on its own goroutine.
	Handle(ctx context.Context, req *Request) (any, error)
	// Event receives an incoming event. It runs on the reader goroutine and
	// must not block.
	Event(ev *wire.Envelope)
}

// Request is one incoming request.
type Request struct {
	ID     string
	Method string
	Params json.RawMessage

	onReply func()
}

// OnReply registers f to run as the reply to this request is queued, with
// no other frame of the connection queued in between: whatever f makes
// possible (another goroutine sending to this peer) reaches the peer after
// the reply. f must not send on the connection itself. Handlers call it
// before returning.
func (r *Request) OnReply(f func()) { r.onReply = f }

// Errors reported by the connection.
var (
	// ErrClosed is returned by calls on a closed connection.
	ErrClosed = errors.New("rpc: connection closed")
	// ErrReusedID means the peer reused a transport ID.
	ErrReusedID = errors.New("rpc: peer reused a transport ID")
	// ErrTooManyIDs means the peer exhausted the connection's transport IDs.
	ErrTooManyIDs = errors.New("rpc: peer exhausted the connection's transport IDs")
	// ErrIDOutOfOrder means a peer in ordered mode sent a transport ID that
	// is not a decimal integer above every one it sent before.
	ErrIDOutOfOrder = errors.New("rpc: peer sent a transport ID out of order")
	// ErrSlowConsumer means the peer stopped reading and output backed up.
	ErrSlowConsumer = errors.New("rpc: peer is not reading; output buffer full")
)

// Conn is one peer connection. Create it with [New], then call [Conn.Run].
type Conn struct {
	rw      io.ReadWriteCloser
	handler Handler
	limits  Limits
	log     *slog.Logger

	wake     chan struct{} // a send wakes the writer; never closed
	flushed  chan struct{} // closed by the writer when nothing is left to write after drain asked
	closed   chan struct{} // closed once by close
	halfDone chan struct{} // closed when the peer half-closed
	done     chan struct{} // closed when Run returns
	closeErr error

	order sync.Mutex // held while queueing a frame: frames queue in one order
	// raw, when rw is a socket, lets push write a frame itself without
	// blocking (see push); nil otherwise.
	raw syscall.RawConn
	// writing is held by whoever writes to rw: the writer goroutine, or
	// push's non-blocking attempt.
	writing sync.Mutex
	// The state of push's non-blocking attempt, guarded by writing: the
	// frame, how much of it went out, and writeSome bound once, so that an
	// attempt allocates nothing.
	tryFrame   []byte
	tryN       int
	tryWriteFn func(fd uintptr) bool

	mu       sync.Mutex
	buffered int                            // bytes queued in out, not yet written
	queue    []queued                       // bytes for the writer, in order
	queued   int                            // entries of queue, and the one being written
	flush    bool                           // drain waits for the queue to empty
	seen     map[string]struct{}            // incoming transport IDs ever accepted
	incoming map[string]context.CancelFunc  // running handlers by ID
	pending  map[string]chan *wire.Envelope // outgoing calls by ID
	nextID   uint64
	ordered  bool   // incoming IDs must increase (OrderIncoming)
	highest  uint64 // the highest incoming ID accepted in ordered mode
	handlers sync.WaitGroup

	// work hands a request to an idle handler goroutine (see accept); idle
	// counts those waiting for one.
	work chan job
	idle atomic.Int32
}

// job is one accepted request for a handler goroutine.
type job struct {
	ctx    context.Context
	cancel context.CancelFunc
	req    *Request
}

// maxIdleHandlers is how many handler goroutines a connection keeps
// waiting for its next request. A goroutine that already served one has
// the stack a handler needs, where a fresh one starts small and grows
// (copying its stack each time) as a JSON decode goes deep.
const maxIdleHandlers = 4

// New returns a connection over rw. log may be nil.
func New(rw io.ReadWriteCloser, h Handler, limits Limits, log *slog.Logger) *Conn {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var raw syscall.RawConn
	if sc, ok := rw.(syscall.Conn); ok {
		raw, _ = sc.SyscallConn()
	}
	c := &Conn{
		rw:       rw,
		raw:      raw,
		handler:  h,
		limits:   limits.withDefaults(),
		log:      log,
		wake:     make(chan struct{}, 1),
		flushed:  make(chan struct{}),
		closed:   make(chan struct{}),
		halfDone: make(chan struct{}),
		done:     make(chan struct{}),
		seen:     make(map[string]struct{}),
		incoming: make(map[string]context.CancelFunc),
		pending:  make(map[string]chan *wire.Envelope),
		work:     make(chan job),
	}
	c.tryWriteFn = c.writeSome
	return c
}

// Run reads and dispatches until the connection closes, then waits for the
// running handlers to return. It returns the reason the connection ended;
// io.EOF means the peer closed cleanly.
func (c *Conn) Run() error {
	defer close(c.done)
	go c.writeLoop()
	err := c.readLoop()
	if err == io.EOF {
		c.drain()
	}
	c.close(err)
	c.handlers.Wait()
	return c.Err()
}

// drain serves a half-closed peer: pending calls fail, handlers of the
// requests already read finish, and their replies are written.
func (c *Conn) drain() {
	c.mu.Lock()
	pending := c.pending
	c.pending = make(map[string]chan *wire.Envelope)
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	close(c.halfDone)
	finished := make(chan struct{})
	go func() { c.handlers.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(DrainTimeout):
		return // a handler ignores HalfClosed: give up on it
	}
	c.mu.Lock()
	c.flush = true
	if c.queued == 0 {
		close(c.flushed)
	}
	c.mu.Unlock()
	select {
	case <-c.flushed:
	case <-c.closed:
	}
}

// HalfClosed is closed when the peer has closed its write side: requests
// already read are still answered, but a handler that would act should not.
func (c *Conn) HalfClosed() <-chan struct{} { return c.halfDone }

// Done is closed when Run has returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Closed is closed as soon as the connection starts closing.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// Err returns why the connection closed, or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// Close closes the connection. Pending callers get CONNECTION_LOST and
// running handlers are cancelled.
func (c *Conn) Close() error {
	c.close(ErrClosed)
	return nil
}

func (c *Conn) close(reason error) {
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		return
	default:
	}
	c.closeErr = reason
	close(c.closed)
	for _, cancel := range c.incoming {
		cancel()
	}
	pending := c.pending
	c.pending = make(map[string]chan *wire.Envelope)
	c.mu.Unlock()

	c.rw.Close()
	for _, ch := range pending {
		close(ch) // the caller sees CONNECTION_LOST
	}
}

func (c *Conn) readLoop() error {
	fr := frames.NewParsedReader(c.rw) // ParseEnvelope refuses what is not JSON
	for {
		payload, err := fr.Read()
		if err != nil {
			return err
		}
		env, err := wire.ParseEnvelope(payload)
		if err != nil {
			c.log.Warn("closing peer: malformed envelope", "err", err)
			return err
		}
		if err := c.dispatch(env); err != nil {
			c.log.Warn("closing peer", "err", err)
			return err
		}
	}
}

func (c *Conn) dispatch(env *wire.Envelope) error {
	switch env.Type {
	case wire.TypeRequest:
		return c.accept(env)
	case wire.TypeResponse:
		c.mu.Lock()
		ch, ok := c.pending[env.ID]
		delete(c.pending, env.ID)
		c.mu.Unlock()
		if ok {
			ch <- env // buffered; the only send
		}
		return nil // a late reply with no pending caller is ignored
	case wire.TypeCancel:
		c.mu.Lock()
		cancel, ok := c.incoming[env.ID]
		c.mu.Unlock()
		if ok {
			cancel()
		}
		return nil
	case wire.TypeEvent:
		c.handler.Event(env)
		return nil
	}
	return fmt.Errorf("rpc: unexpected envelope type %q", env.Type)
}

// accept registers an incoming request and starts its handler.
func (c *Conn) accept(env *wire.Envelope) error {
	c.mu.Lock()
	if _, dup := c.seen[env.ID]; dup {
		c.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrReusedID, env.ID)
	}
	if c.ordered {
		n, ok := OrderedID(env.ID)
		if !ok || n <= c.highest {
			c.mu.Unlock()
			return fmt.Errorf("%w: %q after %d", ErrIDOutOfOrder, env.ID, c.highest)
		}
		c.highest = n
	} else {
		if len(c.seen) >= c.limits.MaxSeenIDs {
			c.mu.Unlock()
			return ErrTooManyIDs
		}
		c.seen[env.ID] = struct{}{}
	}
	if len(c.incoming) >= c.limits.MaxInFlight {
		c.mu.Unlock()
		return c.sendReply(wire.Failure(env.ID, wire.CodeQueueFull), nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.incoming[env.ID] = cancel
	c.handlers.Add(1)
	c.mu.Unlock()

	j := job{ctx, cancel, &Request{ID: env.ID, Method: env.Method, Params: env.Params}}
	select {
	case c.work <- j: // an idle handler goroutine takes it
	default:
		go c.handle(j)
	}
	return nil
}

// handle serves j, then waits for another request while fewer than
// maxIdleHandlers others wait, until the connection closes.
func (c *Conn) handle(j job) {
	for {
		c.serve(j.ctx, j.cancel, j.req)
		if c.idle.Add(1) > maxIdleHandlers {
			c.idle.Add(-1)
			return
		}
		select {
		case j = <-c.work:
			c.idle.Add(-1)
		case <-c.closed:
			c.idle.Add(-1)
			return
		}
	}
}

func (c *Conn) serve(ctx context.Context, cancel context.CancelFunc, req *Request) {
	defer c.handlers.Done()
	value, err := c.handler.Handle(ctx, req)
	if err != nil && CodeOf(err) == wire.CodeInternalError {
		if _, typed := errors.AsType[*wire.Error](err); !typed {
			// An error no handler turned into a code: say what it was here,
			// where it becomes INTERNAL_ERROR, or it is lost.
			c.log.Error("request failed with an unexpected error", "method", req.Method, "err", err)
		}
	}
	frame, ferr := c.replyFrame(req.ID, value, err)

	// Remove the ID from the in-flight set before answering, so a peer that
	// sends its next request as soon as it reads this reply is not refused.
	c.mu.Lock()
	delete(c.incoming, req.ID)
	c.mu.Unlock()
	cancel()
	if err := c.queueReply(frame, ferr, req.ID, req.onReply); err != nil {
		c.close(err)
	}
}

// JSONAppender is a handler's value that writes its own JSON, valid and
// compact by construction. Its reply is written as it appends it, without
// encoding/json, which scans a Marshaler's output once more to check and
// compact it (in a browser.tabs round trip, 3% of all three parties' CPU).
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// replyFrame encodes the reply to request id as one frame.
func (c *Conn) replyFrame(id string, value any, err error) (*encoded, error) {
	if err != nil {
		return encodeFrame(wire.Failure(id, CodeOf(err)))
	}
	if a, ok := value.(JSONAppender); ok {
		// Appended in place, behind the frame header (see encodeFrame).
		f := newFrame()
		f.b, err = wire.AppendSuccess(f.b, id, a.AppendJSON)
		if err == nil {
			err = frames.Seal(f.b)
		}
		if err != nil {
			f.release()
			return nil, err
		}
		return f, nil
	}
	data, merr := json.Marshal(value)
	if merr != nil {
		c.log.Error("handler returned an unencodable value", "id", id, "err", merr)
		return encodeFrame(wire.Failure(id, wire.CodeInternalError))
	}
	return encodeFrame(wire.Success(id, data))
}

// CodeOf maps an error to the registry code it is answered with.
func CodeOf(err error) wire.Code {
	if we, ok := errors.AsType[*wire.Error](err); ok {
		return we.Code
	}
	switch {
	case errors.Is(err, context.Canceled):
		return wire.CodeCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return wire.CodeDeadlineExceeded
	}
	return wire.CodeInternalError
}

// encodeFrame encodes env as one frame, behind a header reserved first, so
// that the envelope is written once and never copied.
func encodeFrame(env *wire.Envelope) (*encoded, error) {
	f := newFrame()
	var err error
	if f.b, err = wire.AppendEncode(f.b, env); err == nil {
		err = frames.Seal(f.b)
	}
	if err != nil {
		f.release()
		return nil, err
	}
	return f, nil
}

// encoded is one frame's bytes, from its encoding until it is written; then
// its buffer goes back to framePool for a later frame. Every frame the
// connection sends is encoded in a fresh buffer otherwise (four in a
// browser.tabs round trip through the broker, about 1.4 KB).
type encoded struct {
	b []byte
}

// framePool holds written frames' buffers.
var framePool = sync.Pool{New: func() any { return &encoded{b: make([]byte, 0, 512)} }}

// maxPooledFrame is the largest buffer kept for reuse: a rare large frame
// is left to the collector rather than held.
const maxPooledFrame = 64 << 10

// newFrame returns an empty frame with its header reserved.
func newFrame() *encoded {
	f := framePool.Get().(*encoded)
	f.b = f.b[:frames.HeaderSize]
	return f
}

// release gives f's buffer back once nothing refers to its bytes any more.
func (f *encoded) release() {
	if cap(f.b) <= maxPooledFrame {
		framePool.Put(f)
	}
}

// queued is a frame, or the tail of one, waiting for the writer.
type queued struct {
	f    *encoded
	data []byte // what is left to write of f.b
}

// sendReply queues a response or event. A reply too large for one frame is
// replaced by QUEUE_FULL; a backed-up peer closes the connection.
func (c *Conn) sendReply(env *wire.Envelope, onQueue func()) error {
	frame, err := encodeFrame(env)
	responseID := ""
	if env.Type == wire.TypeResponse {
		responseID = env.ID
	}
	return c.queueReply(frame, err, responseID, onQueue)
}

// queueReply is sendReply of the frame (and its encoding error) of a
// response to request responseID, or of an event when responseID is "".
func (c *Conn) queueReply(frame *encoded, err error, responseID string, onQueue func()) error {
	if tooLarge, ok := errors.AsType[*frames.TooLargeError](err); ok && responseID != "" {
		c.log.Warn("response exceeds the frame limit", "id", responseID, "bytes", tooLarge.Length)
		frame, err = encodeFrame(wire.Failure(responseID, wire.CodeQueueFull))
	}
	if err != nil {
		return err
	}
	c.order.Lock()
	defer c.order.Unlock()
	if onQueue != nil {
		onQueue()
	}
	if err := c.push(frame); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil
		}
		return err
	}
	return nil
}

// Notify sends an event to the peer.
func (c *Conn) Notify(event string, value any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return err
	}
	if err := c.sendReply(wire.Event(event, data), nil); err != nil {
		c.close(err)
		return err
	}
	return nil
}

// enqueue hands one frame to the writer, enforcing the output budget.
func (c *Conn) enqueue(frame *encoded) error {
	c.order.Lock()
	defer c.order.Unlock()
	return c.push(frame)
}

// push sends one frame (from encodeFrame); c.order must be held, so frames
// leave in the order they are pushed.
//
// When nothing is queued and the connection is a socket, push first tries
// to write the frame itself with one non-blocking write: in the usual case
// the whole frame goes at once and no hand-off to the writer goroutine is
// needed. Whatever is left (all of it when the socket is full, or the tail
// of a partial write) is queued for the writer ahead of anything pushed
// later. Queued bytes count against [Limits.MaxBuffered], so a peer that
// stopped reading still fails a call QUEUE_FULL and never blocks a sender.
func (c *Conn) push(f *encoded) error {
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		return ErrClosed
	default:
	}
	direct := c.raw != nil && c.queued == 0 && c.writing.TryLock()
	c.mu.Unlock()
	frame := f.b
	if direct {
		n, err := c.tryWrite(frame)
		c.writing.Unlock()
		if err != nil {
			c.close(err)
			return ErrClosed
		}
		if frame = frame[n:]; len(frame) == 0 {
			f.release() // all of it went out
			return nil
		}
	}
	c.mu.Lock()
	if c.buffered+len(frame) > c.limits.MaxBuffered {
		c.mu.Unlock()
		if direct {
			// Part of the frame is out: the rest can never follow in order.
			c.close(ErrSlowConsumer)
		}
		return ErrSlowConsumer
	}
	c.buffered += len(frame)
	c.queued++
	c.queue = append(c.queue, queued{f, frame})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // the writer is already awake
	}
	return nil
}

// tryWrite writes as much of frame as the socket takes without waiting,
// and returns how much that was. c.writing must be held.
func (c *Conn) tryWrite(frame []byte) (int, error) {
	c.tryFrame, c.tryN = frame, 0
	err := c.raw.Write(c.tryWriteFn)
	n := c.tryN
	c.tryFrame = nil
	return n, err
}

// writeSome is tryWrite's raw write of c.tryFrame from c.tryN.
func (c *Conn) writeSome(fd uintptr) bool {
	for c.tryN < len(c.tryFrame) {
		m, err := syscall.Write(int(fd), c.tryFrame[c.tryN:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN || m <= 0 {
			break // full: the writer goroutine waits for room
		}
		c.tryN += m
	}
	return true // never wait here
}

// writeLoop writes what push queued, in order: whole frames, or the tail
// of one push could only start.
func (c *Conn) writeLoop() {
	for {
		select {
		case <-c.wake:
		case <-c.closed:
			return
		}
		for {
			c.mu.Lock()
			if len(c.queue) == 0 {
				c.mu.Unlock()
				break
			}
			q := c.queue[0]
			c.queue[0] = queued{}
			c.queue = c.queue[1:]
			c.mu.Unlock()
			c.writing.Lock()
			_, err := c.rw.Write(q.data)
			c.writing.Unlock()
			if err == nil {
				q.f.release()
			}
			data := q.data
			c.mu.Lock()
			c.buffered -= len(data)
			c.queued--
			if c.queued == 0 && c.flush {
				select {
				case <-c.flushed:
				default:
					close(c.flushed)
				}
			}
			c.mu.Unlock()
			if err != nil {
				c.close(err)
				return
			}
		}
	}
}

// MaxOrderedID is the largest transport ID of ordered mode: the largest
// integer a JavaScript number holds exactly.
const MaxOrderedID = 1<<53 - 1

// OrderedID parses a transport ID of ordered mode: a decimal integer from 1
// to MaxOrderedID without leading zeros.
func OrderedID(id string) (uint64, bool) {
	if id == "" || len(id) > 16 || id[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(id, 10, 64)
	return n, err == nil && n <= MaxOrderedID
}

// OrderIncoming switches the connection to ordered transport IDs
// (capability transport.ordered-ids.v1, once both peers offered it): from
// now on an incoming request's ID must be a decimal integer greater than
// every ID accepted since the switch, and not one accepted before it. A
// reused or lower ID still closes the connection without dispatching, but
// nothing needs to be remembered beyond the highest ID, so
// [Limits.MaxSeenIDs] no longer ends the connection.
func (c *Conn) OrderIncoming() {
	c.mu.Lock()
	c.ordered = true
	c.mu.Unlock()
}

// Call sends a request and waits for its response. It returns the success
// value, or a *wire.Error carrying the response's code. If ctx ends first, a
// cancel is sent and the late reply will be ignored.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.CallWithin(ctx, 0, method, params)
}

// CallWithin is Call that also ends, when d > 0, once d has passed without
// a response: the request is cancelled as when ctx ends, and the error is
// context.DeadlineExceeded, as if ctx had a deadline d from now. It costs
// a timer kept from one call to the next, where a context of that deadline
// costs several allocations and a place among its parent's children.
func (c *Conn) CallWithin(ctx context.Context, d time.Duration, method string, params any) (json.RawMessage, error) {
	data := json.RawMessage("{}")
	if params != nil {
		var err error
		if data, err = json.Marshal(params); err != nil {
			return nil, err
		}
	}
	ch := make(chan *wire.Envelope, 1)
	// IDs are 1, 2, 3, … and go out in that order (the ID is taken and the
	// request queued under c.order), as a peer in ordered mode requires.
	c.order.Lock()
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		c.order.Unlock()
		return nil, wire.Err(wire.CodeConnectionLost)
	default:
	}
	if len(c.pending) >= c.limits.MaxInFlight {
		c.mu.Unlock()
		c.order.Unlock()
		return nil, wire.Err(wire.CodeQueueFull)
	}
	c.nextID++
	id := strconv.FormatUint(c.nextID, 10)
	c.pending[id] = ch
	c.mu.Unlock()

	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	req, err := encodeFrame(wire.Request(id, method, data))
	if err != nil {
		c.order.Unlock()
		forget()
		if _, ok := errors.AsType[*frames.TooLargeError](err); ok {
			return nil, wire.Err(wire.CodeQueueFull) // as a full queue: it cannot be sent now
		}
		return nil, err
	}
	err = c.push(req)
	c.order.Unlock()
	if err != nil {
		forget()
		if errors.Is(err, ErrClosed) {
			return nil, wire.Err(wire.CodeConnectionLost)
		}
		return nil, wire.Err(wire.CodeQueueFull)
	}

	var expired <-chan time.Time // nil: never
	if d > 0 {
		t := timers.Get().(*time.Timer)
		t.Reset(d)
		defer func() {
			t.Stop() // and no value left in t.C to be read later (Go 1.23)
			timers.Put(t)
		}()
		expired = t.C
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, wire.Err(wire.CodeConnectionLost)
		}
		if !resp.OK {
			return nil, wire.Err(resp.Code)
		}
		return resp.Value, nil
	case <-ctx.Done():
		c.abandon(id, forget)
		return nil, ctx.Err()
	case <-expired:
		c.abandon(id, forget)
		return nil, context.DeadlineExceeded
	}
}

// timers are CallWithin's timers, stopped, kept for the next call.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// abandon gives up on the call id: its reply will be ignored, and the peer
// is asked to cancel it.
func (c *Conn) abandon(id string, forget func()) {
	forget()
	if cancel, err := encodeFrame(wire.Cancel(id)); err == nil {
		_ = c.enqueue(cancel) // best effort: the peer may already be gone
	}
}
