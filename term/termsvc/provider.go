package termsvc

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-browser/broker/admission"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/wire"
)

// Local is the session a provider serves; [session.Session] is one. Its
// Subscribe is called again each time the link is up, and with nil when it
// goes down.
type Local interface {
	agentapi.Session
	// SetID renames the session to the name the broker gave it.
	SetID(id string)
	// AskClient asks the owner whether a program may use the broker, and
	// waits for the answer until ctx ends.
	AskClient(ctx context.Context, label string) (bool, error)
}

// LinkConfig configures [Link].
type LinkConfig struct {
	RuntimeDir string // default paths.RuntimeDir("")
	SocketPath string // the broker socket; default paths.Socket("", RuntimeDir)
	// Name is the session name to ask for; "" lets the broker choose.
	Name    string
	Version string // reported in the hello's instance
	// Retry is the longest wait between two connection attempts; the
	// first waits are shorter. Default 5 s.
	Retry time.Duration
	// OnChange, if set, is told the session's name when the link is up,
	// and "" when it is down.
	OnChange func(session string)
	Logger   *slog.Logger
}

// DefaultRetry is the longest wait between two connection attempts.
const DefaultRetry = 5 * time.Second

// Link serves sess to the broker as a terminal provider until ctx ends.
// It connects to the broker socket with the token from the runtime
// directory, attaches the session and relays it; when the broker cannot be
// reached or goes away it tries again, waiting a little longer each time
// up to [LinkConfig.Retry]. While it is not connected the session is
// private to its owner: every agent's hold on it has ended.
func Link(ctx context.Context, sess Local, cfg LinkConfig) {
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.RuntimeDir = paths.RuntimeDir(cfg.RuntimeDir)
	cfg.SocketPath = paths.Socket(cfg.SocketPath, cfg.RuntimeDir)
	wait := cfg.Retry / 16
	for ctx.Err() == nil {
		connected, err := linkOnce(ctx, sess, cfg)
		if connected {
			wait = cfg.Retry / 16
			cfg.Logger.Info("lost the broker; the terminal is private until it is back", "err", err)
		} else {
			cfg.Logger.Debug("cannot reach the broker", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, cfg.Retry)
	}
}

// linkOnce runs one connection: it reports whether the session got
// attached, and why the connection ended.
func linkOnce(ctx context.Context, sess Local, cfg LinkConfig) (attached bool, err error) {
	tok, err := os.ReadFile(paths.Token(cfg.RuntimeDir))
	if err != nil {
		return false, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", cfg.SocketPath)
	if err != nil {
		return false, err
	}
	l := &link{sess: sess, log: cfg.Logger}
	l.conn = rpc.New(nc, l, rpc.Limits{}, cfg.Logger)
	l.out = newOutbox(l.conn)
	go l.conn.Run()
	defer l.conn.Close()

	hctx, cancel := context.WithTimeout(ctx, wire.HandshakeTimeout)
	defer cancel()
	raw, err := l.conn.Call(hctx, "hello", wire.Hello{
		Bootstrap:    wire.Bootstrap,
		Versions:     []int{wire.Version},
		Role:         wire.RoleProvider,
		Token:        strings.TrimSpace(string(tok)),
		Capabilities: []string{wire.CapOrderedIDs, CapSession},
		Kind:         Kind,
		Instance: &wire.Instance{
			ID:           fmt.Sprintf("term-%d-%s", os.Getpid(), randomHex(4)),
			Family:       Family,
			Brand:        "broker term",
			Version:      cmp.Or(cfg.Version, "dev"),
			ProfileLabel: cmp.Or(cfg.Name, "terminal"),
		},
	})
	if err != nil {
		return false, fmt.Errorf("hello: %w", err)
	}
	w, err := wire.ParseWelcome(raw)
	if err != nil {
		return false, fmt.Errorf("welcome: %w", err)
	}
	if slices.Contains(w.Capabilities, wire.CapOrderedIDs) {
		l.conn.OrderIncoming()
	}
	raw, err = l.conn.Call(hctx, MethodAttach, AttachParams{Name: cfg.Name})
	if err != nil {
		return false, fmt.Errorf("%s: %w", MethodAttach, err)
	}
	var res AttachResult
	if err := json.Unmarshal(raw, &res); err != nil || res.Session == "" {
		return false, fmt.Errorf("%s: malformed answer %s", MethodAttach, raw)
	}
	cancel()

	sess.SetID(res.Session)
	go l.out.pump()
	sess.Subscribe(l.out)
	cfg.Logger.Info("the terminal is registered with the broker", "session", res.Session)
	if cfg.OnChange != nil {
		cfg.OnChange(res.Session)
	}
	select {
	case <-l.conn.Closed():
		err = l.conn.Err()
	case <-ctx.Done():
		err = ctx.Err()
	}
	l.conn.Close()
	<-l.conn.Done() // no relayed call or event is left running
	l.out.close()
	l.detach()
	if cfg.OnChange != nil {
		cfg.OnChange("")
	}
	return true, err
}

// link is one connection's provider side: it serves the broker's requests
// and events for the session.
type link struct {
	sess Local
	conn *rpc.Conn
	out  *outbox
	log  *slog.Logger

	mu    sync.Mutex
	conns map[uint64]bool // agent connections the broker told of
}

// Handle serves term.call, and the broker's admission questions about
// its clients.
func (l *link) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	switch req.Method {
	case MethodCall:
		return l.call(ctx, req)
	case admission.ProviderMethod:
		var p struct {
			Connection struct {
				Label string `json:"label"`
			} `json:"connection"`
		}
		if json.Unmarshal(req.Params, &p) != nil || p.Connection.Label == "" {
			return nil, wire.Err(wire.CodeInvalidRequest)
		}
		allowed, err := l.sess.AskClient(ctx, p.Connection.Label)
		if err != nil {
			return nil, wire.Err(wire.CodeCancelled)
		}
		return map[string]bool{"allowed": allowed}, nil
	}
	return nil, wire.Err(wire.CodeInvalidRequest)
}

// call relays one agent method to the session.
func (l *link) call(ctx context.Context, req *rpc.Request) (any, error) {
	var ar agentapi.Request
	if err := json.Unmarshal(req.Params, &ar); err != nil {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	rep, err := l.sess.Call(ctx, ar)
	// The events the call produced go out before its answer.
	if ferr := l.out.flush(ctx); ferr != nil {
		return nil, ferr
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ae, ok := errors.AsType[*agentapi.Error](err)
		if !ok {
			ae = agentapi.Unavailable("session failure: " + err.Error())
		}
		return CallResult{Error: ae}, nil
	}
	return CallResult{Reply: &rep}, nil
}

// Event serves term.release and term.peers.
func (l *link) Event(ev *wire.Envelope) {
	switch ev.Event {
	case EventRelease:
		var p ReleaseParams
		if json.Unmarshal(ev.Value, &p) == nil {
			l.sess.Release(p.Conn)
		}
	case EventPeers:
		var p PeersParams
		if json.Unmarshal(ev.Value, &p) != nil {
			return
		}
		l.mu.Lock()
		if l.conns == nil {
			l.conns = map[uint64]bool{}
		}
		for _, peer := range p.Peers {
			l.conns[peer.Conn] = true
		}
		l.mu.Unlock()
		l.sess.Peers(p.Peers)
	default:
		l.log.Debug("ignored an event from the broker", "event", ev.Event)
	}
}

// detach ends what agents held in the session once the broker is gone:
// their connections went with it.
func (l *link) detach() {
	l.sess.Subscribe(nil)
	l.mu.Lock()
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for c := range conns {
		l.sess.Release(c)
	}
	l.sess.Peers(nil)
}

// outbox queues the session's events for the broker, so that the session
// (which reports under its lock) never waits for the connection, and sends
// them in order.
type outbox struct {
	conn *rpc.Conn

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []agentapi.Event
	queued uint64 // events ever queued
	sent   uint64 // events ever handed to the connection
	closed bool
}

func newOutbox(conn *rpc.Conn) *outbox {
	o := &outbox{conn: conn}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// Event implements [agentapi.Sink]: it never blocks. A broker that lets
// [MaxQueuedEvents] pile up is dropped; the link connects again.
func (o *outbox) Event(ev agentapi.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if len(o.queue) >= MaxQueuedEvents {
		o.closed = true
		o.cond.Broadcast()
		go o.conn.Close()
		return
	}
	o.queue = append(o.queue, ev)
	o.queued++
	o.cond.Broadcast()
}

// pump sends the queued events until the outbox is closed.
func (o *outbox) pump() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		for len(o.queue) == 0 && !o.closed {
			o.cond.Wait()
		}
		if o.closed {
			return
		}
		ev := o.queue[0]
		o.queue = o.queue[1:]
		o.mu.Unlock()
		err := o.conn.Notify(EventSession, ev)
		o.mu.Lock()
		o.sent++
		if err != nil {
			o.closed = true
		}
		o.cond.Broadcast()
	}
}

// flush waits until every event queued so far is handed to the
// connection, so that what is sent next follows them.
func (o *outbox) flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	target := o.queued
	for o.sent < target && !o.closed {
		if err := ctx.Err(); err != nil {
			return err
		}
		o.cond.Wait()
	}
	if o.closed {
		return wire.Err(wire.CodeConnectionLost)
	}
	return nil
}

func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.cond.Broadcast()
	o.mu.Unlock()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
