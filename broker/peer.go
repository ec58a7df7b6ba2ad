package broker

import (
	"context"
	"fmt"
	"os"
	"strings"

	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"github.com/dsh-browser/broker/browser"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/dsh-browser/broker/admission"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// peer is one connection: unauthenticated until its hello succeeds, then a
// client or a provider.
type peer struct {
	s     *Server
	conn  *rpc.Conn
	id    uint64
	pid   int
	log   *slog.Logger
	label string // who the client is, shown to the user when it claims a tab

	handshake *time.Timer // closes the peer if no hello succeeds in time

	// ready is set, under Server.mu, as a provider's welcome is queued (see
	// rpc.Request.OnReply): nothing may reach a provider before its welcome
	// (the extension refuses it), so lookups skip providers not ready.
	ready bool

	mu       sync.Mutex // serializes hello; guards the fields below
	welcomed bool
	hello    *wire.Hello
	epoch    string

	// adm is the owner's admission of a client under --admission=prompt;
	// nil when admitted by its token alone (and for every provider). Set
	// once in hello, before welcomed.
	adm *admission.Ticket
}

func newPeer(s *Server, c net.Conn, id uint64, pid int, log *slog.Logger) *peer {
	p := &peer{s: s, id: id, pid: pid, log: log, label: processLabel(pid)}
	p.conn = rpc.New(c, p, s.cfg.Limits, log)
	return p
}

func (p *peer) run() {
	p.handshake = time.AfterFunc(HandshakeTimeout, func() {
		p.mu.Lock()
		ok := p.welcomed
		p.mu.Unlock()
		if !ok {
			p.s.refuse("no successful hello within the handshake window", "conn", p.id)
			p.conn.Close()
		}
	})
	err := p.conn.Run()
	p.handshake.Stop()
	p.s.unregister(p)
	switch p.role() {
	case wire.RoleProvider:
		p.s.rt.ProviderGone(p.hello.Instance.ID)
	case wire.RoleClient:
		p.s.rt.ClientGone(p.id)
	}
	p.log.Debug("connection closed", "err", err)
}

// role returns the negotiated role, or "" before a successful hello.
func (p *peer) role() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.welcomed {
		return ""
	}
	return p.hello.Role
}

// Handle implements rpc.Handler.
func (p *peer) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if req.Method == "hello" {
		return p.handleHello(req)
	}
	switch p.role() {
	case "":
		p.s.refuse("request before a successful hello", "conn", p.id, "method", req.Method)
		return nil, wire.Err(wire.CodePolicyDenied)
	case wire.RoleProvider:
		p.s.refuse("provider called a client method", "conn", p.id, "method", req.Method)
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	if p.denied() {
		return nil, wire.Err(wire.CodeAdmissionDenied) // final for this connection
	}
	h, ok := clientMethods[req.Method]
	if !ok {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	if !readOnly[req.Method] {
		// A client that closed its write side gets answers to its reads, but
		// nothing it asked for acts any more.
		select {
		case <-p.conn.HalfClosed():
			return nil, wire.Err(wire.CodeConnectionLost)
		default:
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-p.conn.HalfClosed():
				cancel()
			case <-ctx.Done():
			}
		}()
		var v any
		err := p.awaitAdmission(ctx, req.Method)
		if err == nil {
			v, err = h(p.s, ctx, p, req.Params)
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
	if err := p.awaitAdmission(ctx, req.Method); err != nil {
		return nil, err
	}
	return h(p.s, ctx, p, req.Params)
}

// Event implements rpc.Handler. Provider events arrive here; a client has
// none to send, and events before hello are ignored.
func (p *peer) Event(ev *wire.Envelope) {
	if p.role() != wire.RoleProvider {
		p.log.Debug("ignored event", "event", ev.Event)
		return
	}
	p.s.rt.ProviderEvent(p.hello.Instance.ID, ev)
}

// ConnID, Label and Notify make a client peer a browser.Client.
func (p *peer) ConnID() uint64 { return p.id }
func (p *peer) Label() string  { return p.label }
func (p *peer) JournalKey() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hello.JournalKey
}
func (p *peer) Notify(event string, value any) error {
	return p.conn.Notify(event, value)
}

// InstanceID and Call make a provider peer a browser.Provider.
func (p *peer) InstanceID() string { return p.hello.Instance.ID }
func (p *peer) Capable(capability string) bool {
	return slices.Contains(p.hello.Capabilities, capability)
}
func (p *peer) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return p.conn.Call(ctx, method, params)
}

// processLabel names a local process for the user: its command name and pid.
func processLabel(pid int) string {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	name := strings.TrimSpace(string(comm))
	if err != nil || name == "" {
		name = "unknown program"
	}
	return fmt.Sprintf("%s (pid %d)", name, pid)
}

// providerFor returns the live provider of an instance, as a browser.Provider.
func (s *Server) providerFor(instanceID string) browser.Provider {
	if p := s.provider(instanceID); p != nil {
		return p
	}
	return nil
}

// clientFor returns the live client connection with this ID.
func (s *Server) clientFor(conn uint64) browser.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.peers {
		if p.id == conn && p.role() == wire.RoleClient {
			return p
		}
	}
	return nil
}

// provider returns the registered provider for an instance ID.
func (s *Server) provider(instanceID string) *peer {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.providers {
		if p.ready && p.hello.Instance.ID == instanceID {
			return p
		}
	}
	return nil
}

func (p *peer) handleHello(req *rpc.Request) (any, error) {
	params := req.Params
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.welcomed {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	h, err := wire.ParseHello(params)
	if err != nil {
		p.s.refuse("malformed hello", "conn", p.id, "err", err)
		return nil, wire.Err(wire.CodeProtocolMismatch)
	}
	if subtle.ConstantTimeCompare([]byte(h.Token), p.s.token) != 1 {
		p.s.refuse("wrong or missing token", "conn", p.id, "role", h.Role)
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	if code := p.s.negotiate(h); code != "" {
		p.s.refuse("negotiation failed", "conn", p.id, "role", h.Role, "code", code)
		return nil, wire.Err(code)
	}
	p.hello = h
	p.epoch = newEpoch()
	if h.Role == wire.RoleProvider {
		if code := p.s.register(p); code != "" {
			p.hello = nil
			return nil, wire.Err(code)
		}
	}
	req.OnReply(func() {
		// With the welcome queued, the peer may use what it offers.
		if slices.Contains(h.Capabilities, wire.CapOrderedIDs) {
			p.conn.OrderIncoming()
		}
		if h.Role == wire.RoleProvider {
			p.s.ready(p)
		}
	})
	if h.Role == wire.RoleClient && p.s.cfg.Admission == AdmissionPrompt {
		// Pending until the owner answers; the question goes out now.
		p.adm = admission.New()
		p.adm.StartAsking()
		go p.s.askOwner(p)
	}
	p.welcomed = true
	p.handshake.Stop()
	if h.Role == wire.RoleProvider {
		p.log.Info("browser connected", "instance", h.Instance.ID, "brand", h.Instance.Brand)
	} else if p.adm != nil {
		p.log.Info("client connected; asking the owner to admit it", "client", p.label)
	} else {
		p.log.Debug("peer welcomed", "role", h.Role)
	}
	return &wire.Welcome{Version: wire.Version, ConnectionEpoch: p.epoch, Capabilities: p.s.caps}, nil
}

// negotiate checks a hello's versions and capabilities against this broker,
// returning the refusal code or "".
func (s *Server) negotiate(h *wire.Hello) wire.Code {
	if !h.OffersVersion(wire.Version) {
		return wire.CodeProtocolMismatch
	}
	if len(wire.Missing(h.RequiredCapabilities, s.caps)) > 0 {
		return wire.CodeProtocolMismatch
	}
	if h.Role == wire.RoleProvider && len(wire.Missing(wire.RequiredProviderCapabilities(), h.Capabilities)) > 0 {
		return wire.CodeProtocolMismatch
	}
	return ""
}

// register adds a welcomed provider, refusing with QUEUE_FULL at capacity and
// POLICY_DENIED when another live provider already uses its instance ID.
func (s *Server) register(p *peer) wire.Code {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.providers) >= s.cfg.MaxProviders {
		s.refuse("provider limit reached", "conn", p.id, "limit", s.cfg.MaxProviders)
		return wire.CodeQueueFull
	}
	for _, q := range s.providers {
		if q.hello.Instance.ID == p.hello.Instance.ID {
			s.refuse("instance ID already registered", "conn", p.id)
			return wire.CodePolicyDenied
		}
	}
	s.providers = append(s.providers, p)
	return ""
}

// ready makes a registered provider visible as its welcome is queued, and
// wakes whoever waits for a browser (admission questions).
func (s *Server) ready(p *peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.providers, p) {
		return // gone already
	}
	p.ready = true
	close(s.providerJoined)
	s.providerJoined = make(chan struct{})
}

func (s *Server) unregister(p *peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.providers, p); i >= 0 {
		s.providers = slices.Delete(s.providers, i, i+1)
		p.log.Info("provider gone", "instance", p.hello.Instance.ID)
	}
}

func newEpoch() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
