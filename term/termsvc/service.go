package termsvc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/dsh-browser/broker/internal/refusal"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/wire"
)

// Config configures the broker's side.
type Config struct {
	// Socket configures the agent socket: its SocketPath
	// (paths.AgentSocket) is required; admission defaults to
	// agentsock.AdmissionPrompt (the owner admits each agent connection in
	// a terminal's bar), the logger to the broker's.
	Socket agentsock.Config
}

// Register returns the terminal kind's service for a broker.
func Register(cfg Config) service.Register {
	return func(h service.Host) (service.Service, error) {
		if cfg.Socket.Logger == nil {
			cfg.Socket.Logger = h.Logger()
		}
		srv, err := agentsock.New(cfg.Socket)
		if err != nil {
			return nil, err
		}
		return &Service{
			cfg:      cfg,
			srv:      srv,
			log:      cfg.Socket.Logger,
			refusals: refusal.New(cfg.Socket.Logger, cfg.Socket.TraceRefusals, refusal.EnvBroker, refusal.EnvAgent),
			relays:   map[service.Provider]*relay{},
		}, nil
	}
}

// Service is the terminal kind: it serves the agent socket and relays each
// terminal provider's session there.
type Service struct {
	cfg      Config
	srv      *agentsock.Server
	log      *slog.Logger
	refusals refusal.Log

	mu     sync.Mutex
	relays map[service.Provider]*relay
}

var _ service.Runner = (*Service)(nil)

// Kind describes terminal providers.
func (s *Service) Kind() service.Kind {
	return service.Kind{
		Name:     Kind,
		Required: []string{CapSession},
		CheckInstance: func(in wire.Instance) error {
			if in.Family != Family {
				return errors.New(`a terminal's instance family must be "terminal"`)
			}
			return nil
		},
		OwnerQuestions: true,
	}
}

// Offers nothing: agents use the agent socket, not the broker socket.
func (s *Service) Offers() []string { return nil }

// Methods is empty: the agent socket is the terminals' public contract.
func (s *Service) Methods() map[string]service.Method { return nil }

// ProviderMethods: a terminal provider attaches its session.
func (s *Service) ProviderMethods() map[string]service.ProviderMethod {
	return map[string]service.ProviderMethod{MethodAttach: s.attach}
}

// Run serves the agent socket for the broker's life.
func (s *Service) Run(ctx context.Context) error {
	s.log.Info("agent socket listening", "socket", s.cfg.Socket.SocketPath)
	return s.srv.Serve(ctx)
}

// Joined needs nothing: the provider attaches its session when ready.
func (s *Service) Joined(service.Provider) {}

// Gone detaches the provider's session: agents see it go.
func (s *Service) Gone(p service.Provider) {
	s.mu.Lock()
	r := s.relays[p]
	s.mu.Unlock()
	if r == nil {
		return
	}
	s.srv.Detach(r.id) // before the name is free again
	s.mu.Lock()
	delete(s.relays, p)
	s.mu.Unlock()
}

// ClientGone needs nothing: agents are not broker clients.
func (s *Service) ClientGone(uint64) {}

// namePattern is what a session name asked for may look like.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// ValidName reports whether a provider may ask for name: at most
// [MaxName] bytes of letters, digits, _ and -, starting with a letter or a
// digit.
func ValidName(name string) bool { return len(name) <= MaxName && namePattern.MatchString(name) }

// attach serves term.attach: it names the provider's session (the name
// asked for if free, else the first free of t1, t2, …) and attaches it to
// the agent socket. A provider attaches once.
func (s *Service) attach(_ context.Context, p service.Provider, params json.RawMessage) (any, error) {
	var in AttachParams
	if err := json.Unmarshal(params, &in); err != nil || (in.Name != "" && !ValidName(in.Name)) {
		s.refusals.Refuse("term.attach with a malformed name", "instance", p.InstanceID())
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	s.mu.Lock()
	if s.relays[p] != nil {
		s.mu.Unlock()
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	taken := map[string]bool{}
	for _, r := range s.relays {
		taken[r.id] = true
	}
	id := in.Name
	for n := 1; id == "" || taken[id]; n++ {
		id = "t" + strconv.Itoa(n)
	}
	r := &relay{svc: s, p: p, id: id}
	s.relays[p] = r
	s.mu.Unlock()
	if err := s.srv.Attach(r); err != nil {
		s.mu.Lock()
		delete(s.relays, p)
		s.mu.Unlock()
		return nil, err
	}
	s.log.Info("terminal attached", "session", id, "instance", p.InstanceID(), "owner_surface", p.OwnerSurface())
	if !p.OwnerSurface() {
		s.log.Warn("this terminal is not run by the broker binary: it may serve agents the owner admitted elsewhere, but cannot admit any itself",
			"session", id, "instance", p.InstanceID())
	}
	return AttachResult{Session: id}, nil
}

// Event delivers a provider's session event to the agent socket.
func (s *Service) Event(p service.Provider, event string, value json.RawMessage) {
	s.mu.Lock()
	r := s.relays[p]
	s.mu.Unlock()
	if r == nil || event != EventSession {
		s.refusals.Refuse("terminal event outside an attached session", "instance", p.InstanceID(), "event", event)
		return
	}
	var ev agentapi.Event
	if err := json.Unmarshal(value, &ev); err != nil {
		s.refusals.Refuse("malformed terminal event", "instance", p.InstanceID(), "err", err)
		return
	}
	r.deliver(ev)
}

// Status lists the agent socket and the attached terminals.
func (s *Service) Status() any {
	st := Status{AgentSocket: s.cfg.Socket.SocketPath, Sessions: []StatusSession{}}
	s.mu.Lock()
	for _, r := range s.relays {
		st.Sessions = append(st.Sessions, r.status())
	}
	s.mu.Unlock()
	slices.SortFunc(st.Sessions, func(a, b StatusSession) int { return cmp.Compare(a.ID, b.ID) })
	return st
}

// Status is the terminal kind's section of broker.status.
type Status struct {
	AgentSocket string          `json:"agentSocket"`
	Sessions    []StatusSession `json:"sessions"`
}

// StatusSession is one attached terminal.
type StatusSession struct {
	ID           string `json:"id"`
	Instance     string `json:"instance"`
	Title        string `json:"title"`
	Shared       bool   `json:"shared"`
	Participants int    `json:"participants"`
	Mode         string `json:"mode"`
	OwnerSurface bool   `json:"ownerSurface"`
}

// relay is one provider's session as the agent socket sees it.
type relay struct {
	svc *Service
	p   service.Provider
	id  string

	mu    sync.Mutex
	sink  agentapi.Sink
	state *agentapi.State // the last one reported, for status
}

var _ agentapi.Session = (*relay)(nil)

func (r *relay) ID() string { return r.id }

// Subscribe records the server's sink; the provider starts reporting once
// its term.attach is answered.
func (r *relay) Subscribe(sink agentapi.Sink) {
	r.mu.Lock()
	r.sink = sink
	r.mu.Unlock()
}

// deliver passes one event of the provider's session on. The provider
// speaks only for its own session, and only an owner surface admits.
func (r *relay) deliver(ev agentapi.Event) {
	ev.Session = r.id
	switch ev.Kind {
	case agentapi.EventState:
		if ev.State == nil {
			r.svc.refusals.Refuse("terminal state event without a state", "session", r.id)
			return
		}
		ev.State.ID = r.id
	case agentapi.EventAdmission:
		if !r.p.OwnerSurface() {
			r.svc.refusals.Refuse("admission answer from a terminal that is not an owner surface", "session", r.id,
				"instance", r.p.InstanceID(), "conn", ev.Conn)
			return
		}
		if ev.State != nil {
			ev.State.ID = r.id
		}
	case agentapi.EventAgent, agentapi.EventAttended, agentapi.EventClosed:
	default:
		r.svc.refusals.Refuse("unknown terminal event", "session", r.id, "kind", ev.Kind)
		return
	}
	r.mu.Lock()
	sink := r.sink
	if ev.State != nil {
		r.state = ev.State
	}
	r.mu.Unlock()
	if sink != nil {
		sink.Event(ev)
	}
}

// Call relays one agent method to the provider.
func (r *relay) Call(ctx context.Context, req agentapi.Request) (agentapi.Reply, error) {
	raw, err := r.p.Call(ctx, MethodCall, req)
	if err != nil {
		if ctx.Err() != nil {
			return agentapi.Reply{}, ctx.Err()
		}
		if rpc.CodeOf(err) == wire.CodeQueueFull {
			return agentapi.Reply{}, agentapi.Errorf(agentapi.CodeRateLimited, "the terminal is busy; retry in a moment")
		}
		return agentapi.Reply{}, agentapi.Unavailable(fmt.Sprintf("terminal %s did not answer %s: %s", r.id, req.Method, rpc.CodeOf(err)))
	}
	var res CallResult
	if err := json.Unmarshal(raw, &res); err != nil || (res.Reply == nil) == (res.Error == nil) {
		return agentapi.Reply{}, agentapi.Unavailable(fmt.Sprintf("terminal %s answered %s with neither a reply nor an error", r.id, req.Method))
	}
	if res.Error != nil {
		return agentapi.Reply{}, res.Error
	}
	return *res.Reply, nil
}

// Release tells the provider a connection left its session.
func (r *relay) Release(conn uint64) {
	r.p.Notify(EventRelease, ReleaseParams{Conn: conn})
}

// Peers tells the provider which agent connections exist. A provider that
// is not an owner surface is not told of pending ones: it could not admit
// them.
func (r *relay) Peers(peers []agentapi.Peer) {
	if !r.p.OwnerSurface() {
		peers = slices.DeleteFunc(slices.Clone(peers), func(p agentapi.Peer) bool { return p.Admission == "pending" })
	}
	r.p.Notify(EventPeers, PeersParams{Peers: peers})
}

func (r *relay) status() StatusSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := StatusSession{ID: r.id, Instance: r.p.InstanceID(), OwnerSurface: r.p.OwnerSurface()}
	if r.state != nil {
		st.Title, st.Shared, st.Participants, st.Mode = r.state.Title, r.state.Shared, len(r.state.Participants), r.state.Mode
	}
	return st
}
