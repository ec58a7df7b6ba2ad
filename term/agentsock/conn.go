package agentsock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-browser/broker/admission"
	"github.com/dsh-browser/broker/term/agentapi"
)

// conn is one agent connection.
type conn struct {
	s  *Server
	id uint64
	nc net.Conn

	// ctx is cancelled when the client closes its write side or goes away:
	// writes and waits stop. readCtx lasts until the connection is gone.
	ctx, readCtx       context.Context
	cancel, cancelRead context.CancelFunc
	closing            atomic.Bool
	closeOnce          sync.Once
	writes             chan *request // to the one goroutine that runs writes, in order
	handlers           sync.WaitGroup

	mu       sync.Mutex // guards the fields below
	helloed  bool
	label    string
	ticket   *admission.Ticket
	bound    string
	inflight int
	tokens   float64
	refilled time.Time

	outMu     sync.Mutex
	outCond   *sync.Cond
	out       []outItem
	queued    int
	outClosed bool
}

func newConn(s *Server, id uint64, nc net.Conn) *conn {
	c := &conn{s: s, id: id, nc: nc, writes: make(chan *request, s.cfg.MaxInFlight)}
	c.readCtx, c.cancelRead = context.WithCancel(context.Background())
	c.ctx, c.cancel = context.WithCancel(c.readCtx)
	c.outCond = sync.NewCond(&c.outMu)
	c.tokens = float64(s.cfg.RateBurst)
	c.refilled = time.Now()
	return c
}

// beforeRead, when set (by tests only), runs before each line is read.
var beforeRead atomic.Pointer[func(conn uint64)]

// request is one decoded request line.
type request struct {
	id      json.RawMessage
	method  string
	params  json.RawMessage // without "session"
	session string          // a session named in params, or ""
}

// run reads requests until the client stops sending, answers what it
// asked, and closes.
func (c *conn) run() {
	writerDone := make(chan struct{})
	go func() { c.writeLoop(); close(writerDone) }()
	workerDone := make(chan struct{})
	go func() { c.runWrites(); close(workerDone) }()

	lr := newLineReader(c.nc, c.s.cfg.MaxLine)
	var held []*request // writes waiting until everything before them is read
	for {
		if h := beforeRead.Load(); h != nil {
			(*h)(c.id)
		}
		line, err := lr.Next()
		switch {
		case errors.Is(err, ErrLineTooLong):
			c.s.refuse("line too long", "conn", c.id, "limit", c.s.cfg.MaxLine)
			c.respond(nil, nil, nil, agentapi.Errorf(agentapi.CodeParse, "line longer than %d bytes", c.s.cfg.MaxLine))
		case err != nil:
			c.beginClose()
			c.release(held)
			held = nil
		case len(bytes.TrimSpace(line)) > 0:
			req, perr := decodeRequest(line)
			if perr != nil {
				c.respond(req.id, nil, nil, perr)
			} else if c.accept(req) {
				held = append(held, req)
			}
		}
		if err != nil && !errors.Is(err, ErrLineTooLong) {
			break
		}
		if len(held) > 0 && lr.Buffered() == 0 {
			switch peekConn(c.nc) {
			case peekData:
				continue // more was sent before these writes were read in full
			case peekEOF:
				c.beginClose()
			}
			c.release(held)
			held = nil
		}
	}
	close(c.writes)
	<-workerDone
	waited := make(chan struct{})
	go func() { c.handlers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(DrainTimeout):
		c.cancelRead()
		<-waited
	}
	c.cancelRead()
	c.outMu.Lock()
	c.outClosed = true
	c.outCond.Broadcast()
	c.outMu.Unlock()
	<-writerDone
	c.nc.Close()
}

// beginClose runs once when the client closes its write side or goes
// away: waiting writes stop, and the connection's lease and pending work
// in every session end now.
func (c *conn) beginClose() {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.cancel()
		for _, sess := range c.s.others("") {
			sess.Release(c.id)
		}
	})
}

// release hands held writes to the write goroutine, in order.
func (c *conn) release(held []*request) {
	for _, r := range held {
		c.writes <- r
	}
}

// runWrites runs writes one at a time; after a close they are answered
// connection_closing without running.
func (c *conn) runWrites() {
	for r := range c.writes {
		if c.closing.Load() {
			c.s.refuse("write after the client closed its side", "conn", c.id, "method", r.method)
			c.respond(r.id, nil, nil, agentapi.Errorf(agentapi.CodeConnectionClosing, "the connection is closing; %s did not run", r.method))
		} else {
			c.handle(r)
		}
		c.finished()
	}
}

// accept takes one request: hello and refusals are answered here, reads
// start at once, and writes are returned true to be held.
func (c *conn) accept(r *request) bool {
	c.mu.Lock()
	helloed, denied := c.helloed, false
	if c.ticket != nil {
		st, _ := c.ticket.State()
		denied = st == admission.Denied
	}
	c.mu.Unlock()
	switch {
	case denied:
		c.respond(r.id, nil, nil, agentapi.Errorf(agentapi.CodeAdmissionDenied, "the owner refused this connection"))
		return false
	case r.method == agentapi.MethodHello:
		res, err := c.hello(r)
		c.respond(r.id, res, nil, err)
		return false
	case !helloed:
		c.s.refuse("request before hello", "conn", c.id, "method", r.method)
		c.respond(r.id, nil, nil, agentapi.Errorf(agentapi.CodeHelloRequired, "the first message must be hello"))
		return false
	case agentapi.OwnerOnly[r.method]:
		c.s.refuse("owner operation on the agent socket", "conn", c.id, "method", r.method)
		c.respond(r.id, nil, nil, agentapi.Errorf(agentapi.CodeOwnerRequired, "%s belongs to the owner, not to the agent socket", r.method))
		return false
	case !known[r.method]:
		c.respond(r.id, nil, nil, agentapi.Errorf(agentapi.CodeUnsupported, "unknown method %q", r.method))
		return false
	}
	if err := c.take(); err != nil {
		c.s.refuse("rate limited", "conn", c.id, "method", r.method)
		c.respond(r.id, nil, nil, err)
		return false
	}
	if agentapi.Reads[r.method] {
		c.handlers.Add(1)
		go func() {
			defer c.handlers.Done()
			defer c.finished()
			c.handle(r)
		}()
		return false
	}
	return true
}

// take counts a request against the in-flight cap and the rate.
func (c *conn) take() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.s.cfg.RatePerSecond > 0 {
		c.tokens = min(c.tokens+now.Sub(c.refilled).Seconds()*c.s.cfg.RatePerSecond, float64(c.s.cfg.RateBurst))
	}
	c.refilled = now
	if c.inflight >= c.s.cfg.MaxInFlight {
		return agentapi.Errorf(agentapi.CodeRateLimited, "%d requests of this connection are already in flight", c.inflight)
	}
	if c.tokens < 1 {
		return agentapi.Errorf(agentapi.CodeRateLimited, "too many requests; slow down")
	}
	c.tokens--
	c.inflight++
	return nil
}

func (c *conn) finished() {
	c.mu.Lock()
	c.inflight--
	c.mu.Unlock()
}

// admit records the owner's answer; it reports whether it was the first.
func (c *conn) admit(allowed bool) bool {
	c.mu.Lock()
	t := c.ticket
	c.mu.Unlock()
	return t != nil && t.Decide(allowed)
}

// peer describes the connection to the owner, once it said hello.
func (c *conn) peer() (agentapi.Peer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.helloed {
		return agentapi.Peer{}, false
	}
	st, _ := c.ticket.State()
	return agentapi.Peer{Conn: c.id, Label: c.label, Admission: string(st)}, true
}

// --- output ---

type outItem struct {
	line     []byte
	id       json.RawMessage // set for a response
	response bool
	check    *boundary // nil for connection-level content
}

type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

type event struct {
	Event  string          `json:"event"`
	Params json.RawMessage `json:"params"`
}

// respond queues the answer to request id. A refusal's reason goes to the
// trace, never to the wire.
func (c *conn) respond(id json.RawMessage, result json.RawMessage, check *boundary, err error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	var line []byte
	if err != nil {
		line, _ = json.Marshal(response{ID: id, Error: c.wireError(err)})
		line = append(line, '\n')
	} else {
		if result == nil {
			result = json.RawMessage("null")
		}
		// Results come from json.Marshal: written as they are, without
		// encoding/json checking and compacting them once more.
		line = make([]byte, 0, len(id)+len(result)+len(`{"id":,"result":}`)+1)
		line = append(append(append(append(line, `{"id":`...), id...), `,"result":`...), result...)
		line = append(line, "}\n"...)
	}
	c.enqueue(outItem{line: line, id: id, response: true, check: check})
}

func (c *conn) wireError(err error) *wireError {
	var ae *agentapi.Error
	switch {
	case errors.As(err, &ae):
		if ae.Reason != "" {
			c.s.refuse(ae.Reason, "conn", c.id, "code", ae.Code)
		}
		return &wireError{Code: ae.Code, Message: ae.Message}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &wireError{Code: agentapi.CodeConnectionClosing, Message: "the connection is closing"}
	}
	c.s.refuse("session failure: "+err.Error(), "conn", c.id)
	u := agentapi.Unavailable("")
	return &wireError{Code: u.Code, Message: u.Message}
}

// event queues a connection event with params built here.
func (c *conn) event(name string, params map[string]any, check *boundary) {
	raw, _ := json.Marshal(params)
	c.eventRaw(name, raw, check)
}

func (c *conn) eventRaw(name string, params json.RawMessage, check *boundary) {
	line, _ := json.Marshal(event{Event: name, Params: params})
	c.enqueue(outItem{line: append(line, '\n'), check: check})
}

// enqueue adds output for the writer. A client that lets more than
// MaxQueued bytes wait is closed: it can no longer be answered truthfully.
func (c *conn) enqueue(it outItem) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if c.outClosed {
		return
	}
	if c.queued+len(it.line) > c.s.cfg.MaxQueued {
		c.s.refuse("the client does not read its answers; closing it", "conn", c.id, "queued", c.queued)
		c.outClosed = true
		c.out = nil
		c.outCond.Broadcast()
		c.nc.Close()
		return
	}
	c.out = append(c.out, it)
	c.queued += len(it.line)
	c.outCond.Signal()
}

// writeLoop writes queued output in order, checking each item's boundary
// right before it is written.
func (c *conn) writeLoop() {
	for {
		c.outMu.Lock()
		for len(c.out) == 0 && !c.outClosed {
			c.outCond.Wait()
		}
		if len(c.out) == 0 {
			c.outMu.Unlock()
			return
		}
		it := c.out[0]
		c.out = c.out[1:]
		c.queued -= len(it.line)
		c.outMu.Unlock()

		line := it.line
		if it.check != nil && !c.s.current(c.id, it.check) {
			if !it.response {
				c.s.refuse("obsolete event dropped", "conn", c.id, "session", it.check.session)
				continue
			}
			c.s.refuse("obsolete answer withheld", "conn", c.id, "session", it.check.session)
			u := agentapi.Unavailable("")
			line, _ = json.Marshal(response{ID: it.id, Error: &wireError{Code: u.Code, Message: u.Message}})
			line = append(line, '\n')
		}
		if _, err := c.nc.Write(line); err != nil {
			c.outMu.Lock()
			c.outClosed = true
			c.out = nil
			c.outMu.Unlock()
			return
		}
	}
}

// decodeRequest parses one line. A line that is not a request gets a parse
// error (with its id when one could be read).
func decodeRequest(line []byte) (*request, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if t := bytes.TrimSpace(line); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &m) != nil {
		return &request{}, agentapi.Errorf(agentapi.CodeParse, "not a JSON object")
	}
	r := &request{id: m.ID}
	if len(m.ID) == 0 || bytes.Equal(m.ID, []byte("null")) {
		r.id = nil
		return r, agentapi.Errorf(agentapi.CodeParse, "a request needs an id")
	}
	if m.ID[0] != '"' && (m.ID[0] < '0' || m.ID[0] > '9') && m.ID[0] != '-' {
		r.id = nil
		return r, agentapi.Errorf(agentapi.CodeParse, "an id is a number or a string")
	}
	if m.Method == nil || *m.Method == "" {
		return r, agentapi.Errorf(agentapi.CodeParse, "a request needs a method")
	}
	r.method = *m.Method
	p := bytes.TrimSpace(m.Params)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return r, nil
	}
	if p[0] != '{' {
		return r, agentapi.Errorf(agentapi.CodeInvalidInput, "params must be an object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(p, &fields); err != nil {
		return r, agentapi.Errorf(agentapi.CodeInvalidInput, "params: %v", err)
	}
	r.params = p
	if sv, ok := fields["session"]; ok && r.method != agentapi.MethodHello {
		if json.Unmarshal(sv, &r.session) != nil {
			return r, agentapi.Errorf(agentapi.CodeInvalidInput, "session must be a session ID")
		}
		delete(fields, "session")
		r.params, _ = json.Marshal(fields)
	}
	return r, nil
}
