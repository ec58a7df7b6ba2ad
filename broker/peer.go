package broker

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-browser/broker/admission"
	"github.com/dsh-browser/broker/internal/ownersock"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
)

// peer is one connection: unauthenticated until its hello succeeds, then a
// client or a provider. A welcomed peer is a service.Client or a
// service.Provider.
type peer struct {
	s     *Server
	conn  *rpc.Conn
	id    uint64
	pid   int
	log   *slog.Logger
	label string // who the peer is (program and pid), shown to the owner; set at hello

	handshake *time.Timer // closes the peer if no hello succeeds in time
	released  atomic.Bool // its socket slot was given back (Server.releaseSocket)

	// ready is set, under Server.mu, as a provider's welcome is queued (see
	// rpc.Request.OnReply): nothing may reach a provider before its welcome
	// (the extension refuses it), so lookups skip providers not ready.
	ready bool

	mu       sync.Mutex // serializes hello; guards attempts
	attempts int        // requests before the welcome

	since    time.Time    // when the hello succeeded; set before state is published
	admitted atomic.Int64 // a client's admission time (Unix ns), 0 while not admitted

	// state is published once, when the hello succeeds, and never changes.
	state atomic.Pointer[welcomed]
}

// welcomed is what a successful hello settled about a peer.
type welcomed struct {
	hello *wire.Hello
	epoch string
	// svc is a provider's kind's service.
	svc service.Service
	// ownerSurface: a provider the owner's own software runs, of a kind
	// that shows owner questions.
	ownerSurface bool
	// adm is the owner's admission of a client under --admission=prompt;
	// nil when admitted by its token alone (and for every provider).
	adm *admission.Ticket
}

func newPeer(s *Server, c net.Conn, id uint64, pid int, log *slog.Logger) *peer {
	p := &peer{s: s, id: id, pid: pid, log: log}
	p.conn = rpc.New(c, p, s.cfg.Limits, log)
	return p
}

func (p *peer) run() {
	p.handshake = time.AfterFunc(HandshakeTimeout, func() {
		if p.state.Load() == nil {
			p.s.refuse("no successful hello within the handshake window", "conn", p.id)
			p.conn.Close()
		}
	})
	err := p.conn.Run()
	p.handshake.Stop()
	p.s.unregister(p)
	if w := p.state.Load(); w != nil {
		p.s.ownerChanged(topicClients)
		switch w.hello.Role {
		case wire.RoleProvider:
			w.svc.Gone(p)
		case wire.RoleClient:
			for _, svc := range p.s.services {
				svc.ClientGone(p.id)
			}
		}
	}
	p.log.Debug("connection closed", "err", err)
}

// role returns the negotiated role, or "" before a successful hello.
func (p *peer) role() string {
	if w := p.state.Load(); w != nil {
		return w.hello.Role
	}
	return ""
}

// Handle implements rpc.Handler.
func (p *peer) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	w := p.state.Load()
	if w == nil {
		return p.beforeWelcome(req)
	}
	switch {
	case req.Method == "hello":
		return nil, wire.Err(wire.CodeInvalidRequest)
	case w.hello.Role == wire.RoleProvider:
		return p.fromProvider(ctx, w, req)
	}
	if w.adm != nil {
		if s, _ := w.adm.State(); s == admission.Denied {
			return nil, p.admissionCode(wire.CodeAdmissionDenied) // final for this connection
		}
	}
	m, ok := p.s.methods[req.Method]
	if !ok {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	if m.ReadOnly {
		if err := p.awaitAdmission(ctx, w, m); err != nil {
			return nil, err
		}
		return p.s.call(ctx, p, req, m)
	}
	// A client that closed its write side gets answers to its reads, but
	// nothing it asked for acts any more.
	select {
	case <-p.conn.HalfClosed():
		return nil, wire.Err(wire.CodeConnectionLost)
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.conn.HalfClosed():
			cancel()
		case <-ctx.Done():
		}
	}()
	var v any
	err := p.awaitAdmission(ctx, w, m)
	if err == nil {
		v, err = p.s.call(ctx, p, req, m)
	}
	select {
	case <-p.conn.HalfClosed():
		if err != nil {
			err = wire.Err(wire.CodeConnectionLost) // one closing code, however far it got
		}
	default:
	}
	return v, err
}

// beforeWelcome serves a peer without a successful hello: only hello, and
// only [MaxHelloAttempts] requests in all.
func (p *peer) beforeWelcome(req *rpc.Request) (any, error) {
	p.mu.Lock()
	p.attempts++
	n := p.attempts
	p.mu.Unlock()
	if n > MaxHelloAttempts {
		p.s.refuse("too many requests before a successful hello", "conn", p.id)
		p.conn.Close()
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	if req.Method != "hello" {
		p.s.refuse("request before a successful hello", "conn", p.id, "method", req.Method)
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	return p.handleHello(req)
}

// fromProvider serves a request a provider sent: only its kind's provider
// methods.
func (p *peer) fromProvider(ctx context.Context, w *welcomed, req *rpc.Request) (any, error) {
	if h, ok := p.s.ownerMethods()[req.Method]; ok {
		return p.fromOwner(ctx, w, req.Method, h, req.Params)
	}
	h, ok := w.svc.ProviderMethods()[req.Method]
	if !ok {
		p.s.refuse("provider called a method its kind does not offer", "conn", p.id, "method", req.Method)
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	v, err := h(ctx, p, req.Params)
	return v, p.s.wireError(err, req.Method, p)
}

// Event implements rpc.Handler. Provider events go to their kind's
// service; a client has none to send, and events before hello are ignored.
func (p *peer) Event(ev *wire.Envelope) {
	w := p.state.Load()
	if w == nil || w.hello.Role != wire.RoleProvider {
		p.log.Debug("ignored event", "event", ev.Event)
		return
	}
	w.svc.Event(p, ev.Event, ev.Value)
}

// The service.Client side of a client peer.

func (p *peer) ConnID() uint64 { return p.id }
func (p *peer) Label() string  { return p.label }
func (p *peer) JournalKey() string {
	if w := p.state.Load(); w != nil {
		return w.hello.JournalKey
	}
	return ""
}
func (p *peer) Notify(event string, value any) error {
	return p.conn.Notify(event, value)
}

// Capable reports whether the peer listed a capability in its hello.
func (p *peer) Capable(capability string) bool {
	w := p.state.Load()
	return w != nil && slices.Contains(w.hello.Capabilities, capability)
}

// Call sends a request to the peer.
func (p *peer) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return p.conn.Call(ctx, method, params)
}

// CallWithin sends a request to the peer that fails past d.
func (p *peer) CallWithin(ctx context.Context, d time.Duration, method string, params any) (json.RawMessage, error) {
	return p.conn.CallWithin(ctx, d, method, params)
}

// The service.Provider side of a provider peer.

func (p *peer) InstanceID() string      { return p.state.Load().hello.Instance.ID }
func (p *peer) Kind() string            { return p.state.Load().hello.ProviderKind() }
func (p *peer) Instance() wire.Instance { return *p.state.Load().hello.Instance }
func (p *peer) OwnerSurface() bool      { return p.state.Load().ownerSurface }

// processLabel names a local process for the user: its command name and pid.
func processLabel(pid int) string {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	name := strings.TrimSpace(string(comm))
	if err != nil || name == "" {
		name = "unknown program"
	}
	return fmt.Sprintf("%s (pid %d)", name, pid)
}

func (p *peer) handleHello(req *rpc.Request) (any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.Load() != nil {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	h, err := wire.ParseHello(req.Params)
	if err != nil {
		p.s.refuse("malformed hello", "conn", p.id, "err", err)
		return nil, wire.Err(wire.CodeProtocolMismatch)
	}
	if subtle.ConstantTimeCompare([]byte(h.Token), p.s.token) != 1 {
		p.s.refuse("wrong or missing token", "conn", p.id, "role", h.Role)
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	if h.JournalKey != "" && journalKeyBits(h.JournalKey) < MinJournalKeyBits {
		p.s.refuse("journalKey too weak", "conn", p.id, "bits", int(journalKeyBits(h.JournalKey)))
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	p.label = processLabel(p.pid) // read now, not for every socket accepted
	w := &welcomed{hello: h, epoch: newEpoch()}
	if code := p.s.negotiate(p, w); code != "" {
		return nil, wire.Err(code)
	}
	if h.Role == wire.RoleProvider {
		if code := p.s.register(p, h.Instance.ID); code != "" {
			return nil, wire.Err(code)
		}
	}
	if h.Role == wire.RoleClient && p.s.cfg.Admission == AdmissionPrompt {
		w.adm = admission.New()
	}
	p.since = time.Now()
	if h.Role == wire.RoleClient && w.adm == nil {
		p.admitted.Store(p.since.UnixNano()) // its token admits it
	}
	p.state.Store(w)
	p.handshake.Stop()
	p.s.authenticated(p)
	p.s.ownerChanged(topicClients)
	req.OnReply(func() {
		// With the welcome queued, the peer may use what it offers.
		if slices.Contains(h.Capabilities, wire.CapOrderedIDs) {
			p.conn.OrderIncoming()
		}
		if h.Role == wire.RoleProvider {
			p.s.ready(p)
		}
	})
	switch {
	case h.Role == wire.RoleProvider:
		p.log.Info("provider connected", "kind", h.ProviderKind(), "instance", h.Instance.ID,
			"brand", h.Instance.Brand, "owner_surface", w.ownerSurface)
	case w.adm != nil:
		// Pending until the owner answers; the question goes out now.
		p.log.Info("client connected; asking the owner to admit it", "client", p.label)
		w.adm.StartAsking()
		go p.s.askOwner(p, w.adm)
	default:
		p.log.Debug("client welcomed")
	}
	return &wire.Welcome{Version: wire.Version, ConnectionEpoch: w.epoch, Capabilities: p.s.caps}, nil
}

// negotiate checks a hello's versions and capabilities against this broker
// and, for a provider, its kind; it fills in what the kind decides about
// the peer, and returns the refusal code or "".
func (s *Server) negotiate(p *peer, w *welcomed) wire.Code {
	h := w.hello
	if !h.OffersVersion(wire.Version) {
		s.refuse("no common wire version", "conn", p.id)
		return wire.CodeProtocolMismatch
	}
	if m := wire.Missing(h.RequiredCapabilities, s.caps); len(m) > 0 {
		s.refuse("peer requires capabilities this broker lacks", "conn", p.id, "missing", m)
		return wire.CodeProtocolMismatch
	}
	if h.Role != wire.RoleProvider {
		return ""
	}
	svc, ok := s.kinds[h.ProviderKind()]
	if !ok {
		s.refuse("provider of an unknown kind", "conn", p.id, "kind", h.ProviderKind())
		return wire.CodeProtocolMismatch
	}
	kind := svc.Kind()
	if m := wire.Missing(kind.Required, h.Capabilities); len(m) > 0 {
		s.refuse("provider lacks its kind's required capabilities", "conn", p.id, "kind", kind.Name, "missing", m)
		return wire.CodeProtocolMismatch
	}
	if kind.CheckInstance != nil {
		if err := kind.CheckInstance(*h.Instance); err != nil {
			s.refuse("provider's instance does not fit its kind", "conn", p.id, "kind", kind.Name, "err", err)
			return wire.CodeProtocolMismatch
		}
	}
	w.svc = svc
	w.ownerSurface = kind.OwnerQuestions && s.ownerExecutable(p.pid)
	return ""
}

// ownerExecutable reports whether process pid runs one of the owner's
// executables.
func (s *Server) ownerExecutable(pid int) bool {
	exe, err := ownersock.ProcessExecutable(pid)
	if err != nil {
		s.log.Debug("cannot read a provider's executable", "pid", pid, "err", err)
		return false
	}
	for _, path := range s.cfg.OwnerExecutables {
		if fi, err := os.Stat(path); err == nil && os.SameFile(fi, exe) {
			return true
		}
	}
	return false
}

// register adds a welcomed provider, refusing with QUEUE_FULL at capacity and
// POLICY_DENIED when another live provider already uses its instance ID.
func (s *Server) register(p *peer, instanceID string) wire.Code {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.providers) >= s.cfg.MaxProviders {
		s.refuse("provider limit reached", "conn", p.id, "limit", s.cfg.MaxProviders)
		return wire.CodeQueueFull
	}
	for _, q := range s.providers {
		if q.state.Load().hello.Instance.ID == instanceID {
			s.refuse("instance ID already registered", "conn", p.id)
			return wire.CodePolicyDenied
		}
	}
	s.providers = append(s.providers, p)
	return ""
}

// ready makes a registered provider visible as its welcome is queued, tells
// its service, and wakes whoever waits for a provider (admission questions).
func (s *Server) ready(p *peer) {
	s.mu.Lock()
	if !slices.Contains(s.providers, p) {
		s.mu.Unlock()
		return // gone already
	}
	p.ready = true
	close(s.providerJoined)
	s.providerJoined = make(chan struct{})
	s.mu.Unlock()
	s.ownerChanged(topicClients)
	p.state.Load().svc.Joined(p)
}

func (s *Server) unregister(p *peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.providers, p); i >= 0 {
		s.providers = slices.Delete(s.providers, i, i+1)
		p.log.Info("provider gone", "instance", p.state.Load().hello.Instance.ID)
	}
}

// MinJournalKeyBits is the least distinct material a hello's journalKey must
// carry. The key names the client's durable action identities across
// reconnects; one anyone could guess would let another program collide
// with them.
const MinJournalKeyBits = 128

// journalKeyBits estimates the distinct material of a 64-hex journalKey:
// the smaller of its characters' empirical entropy (64 × bits per
// character) and its shortest period (4 bits per character of it), so
// "aaaa…", "abab…" or a 16-character block repeated all score low, and a
// random key scores about 230.
func journalKeyBits(k string) float64 {
	counts := make(map[byte]int)
	for i := range len(k) {
		counts[k[i]]++
	}
	n := float64(len(k))
	entropy := 0.0
	for _, c := range counts {
		p := float64(c) / n
		entropy -= n * p * math.Log2(p)
	}
	period := len(k)
	for p := 1; p < len(k); p++ {
		if k[p:] == k[:len(k)-p] {
			period = p
			break
		}
	}
	return min(entropy, float64(4*period))
}

func newEpoch() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
