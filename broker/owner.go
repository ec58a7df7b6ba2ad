package broker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/dsh-browser/broker/activity"
	"github.com/dsh-browser/broker/admission"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
)

// The owner's console (PROTOCOL.md, "The owner's console"). An owner
// surface — the extension, through nativehost — may ask the broker for its
// whole state (owner.state), stop a client (owner.stop) and read the
// activity log (owner.log); the broker tells it when any of that changes
// (owner.changed, coalesced, naming topics only: no page content). Any
// other provider asking is refused POLICY_DENIED, as for every owner
// question: a program that merely holds the token is not the owner.

// Topics of owner.changed.
const (
	topicClients = "clients" // a client or browser connected, left, or was admitted or denied
	topicGrants  = "grants"  // a grant (a lease) began or ended
	topicLog     = "log"     // an activity entry began or ended
)

// ownerEventDelay coalesces changes into one owner.changed event.
const ownerEventDelay = 50 * time.Millisecond

// maxOwnerLogBytes bounds an owner.log answer, well under the 1 MiB a
// native-messaging host may send the browser.
const maxOwnerLogBytes = 512 << 10

// ownerEvents coalesces the changes the consoles are told about.
type ownerEvents struct {
	mu     sync.Mutex
	topics map[string]bool
	timer  *time.Timer // pending owner.changed, or nil
}

// ownerChanged records a change and schedules an owner.changed event.
func (s *Server) ownerChanged(topic string) {
	s.owner.mu.Lock()
	defer s.owner.mu.Unlock()
	if s.owner.topics == nil {
		s.owner.topics = make(map[string]bool)
	}
	s.owner.topics[topic] = true
	if s.owner.timer == nil {
		s.owner.timer = time.AfterFunc(ownerEventDelay, s.sendOwnerChanged)
	}
}

func (s *Server) sendOwnerChanged() {
	s.owner.mu.Lock()
	topics := make([]string, 0, len(s.owner.topics))
	for t := range s.owner.topics {
		topics = append(topics, t)
	}
	s.owner.topics, s.owner.timer = nil, nil
	s.owner.mu.Unlock()
	slices.Sort(topics)
	for _, p := range s.consoles() {
		p.conn.Notify(wire.OwnerChanged, map[string][]string{"topics": topics})
	}
}

// consoles returns the ready owner surfaces that show the console.
func (s *Server) consoles() []*peer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*peer
	for _, p := range s.providers {
		if p.ready && p.state.Load().ownerSurface && p.Capable(wire.CapOwnerConsole) {
			out = append(out, p)
		}
	}
	return out
}

// The service.Overseer side of the server.

// GrantsChanged tells the consoles that a grant began or ended.
func (s *Server) GrantsChanged() { s.ownerChanged(topicGrants) }

// Activity returns the owner's activity log, or nil without a state
// directory.
func (s *Server) Activity() *activity.Log { return s.activity }

// ownerMethod serves one request of an owner surface.
type ownerMethod func(ctx context.Context, params json.RawMessage) (any, error)

// ownerMethods are the requests only an owner surface may send.
func (s *Server) ownerMethods() map[string]ownerMethod {
	return map[string]ownerMethod{
		wire.OwnerState: s.ownerState,
		wire.OwnerStop:  s.ownerStop,
		wire.OwnerLog:   s.ownerLog,
	}
}

// fromOwner serves owner method h for p, refusing it POLICY_DENIED unless
// p is an owner surface.
func (p *peer) fromOwner(ctx context.Context, w *welcomed, method string, h ownerMethod, params json.RawMessage) (any, error) {
	if !w.ownerSurface {
		p.s.refuse("an owner method from a provider that is not an owner surface", "conn", p.id, "method", method)
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	v, err := h(ctx, params)
	return v, p.s.wireError(err, method, p)
}

// OwnerState is the value of owner.state: everything the console shows
// but the log.
type OwnerState struct {
	Version   string        `json:"version"`
	Admission string        `json:"admission"` // open or prompt
	Clients   []OwnerClient `json:"clients"`
	// Services holds each provider kind's broker.status section (for
	// browser: accessMode, allowOrigins, instances, leases).
	Services map[string]json.RawMessage `json:"services"`
	Log      *activity.Status           `json:"log,omitempty"`
	Journal  *JournalStatus             `json:"journal,omitempty"`
}

// OwnerClient is one connected client as the console shows it.
type OwnerClient struct {
	Conn        uint64    `json:"conn"`
	Label       string    `json:"label"` // "<program> (pid N)": what it is, never a permission
	PID         int       `json:"pid"`
	ConnectedAt time.Time `json:"connectedAt"`
	// Admission: "token" (admitted by its token, --admission=open),
	// "pending", "granted" or "denied" (--admission=prompt).
	Admission  string          `json:"admission"`
	Asking     bool            `json:"asking,omitempty"` // pending, and the owner is being asked now
	AdmittedAt *time.Time      `json:"admittedAt,omitempty"`
	Grants     []service.Grant `json:"grants"`
}

func (s *Server) ownerState(_ context.Context, params json.RawMessage) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	grants := make(map[uint64][]service.Grant)
	for _, svc := range s.services {
		if o, ok := svc.(service.Overseen); ok {
			for _, g := range o.Grants() {
				grants[g.Conn] = append(grants[g.Conn], g)
			}
		}
	}
	st := &OwnerState{Version: s.cfg.Version, Admission: s.cfg.Admission, Clients: []OwnerClient{},
		Services: make(map[string]json.RawMessage), Journal: s.journalStatus()}
	st.Log = s.activityStatus()
	for kind, svc := range s.kinds {
		raw, err := json.Marshal(svc.Status())
		if err != nil {
			return nil, err
		}
		st.Services[kind] = raw
	}
	for _, p := range s.clientPeers() {
		w := p.state.Load()
		c := OwnerClient{Conn: p.id, Label: p.label, PID: p.pid, ConnectedAt: p.since.UTC(), Admission: "token",
			Grants: grants[p.id]}
		if c.Grants == nil {
			c.Grants = []service.Grant{}
		}
		if w.adm != nil {
			state, asking := w.adm.State()
			c.Admission, c.Asking = string(state), asking && state == admission.Pending
		}
		if ns := p.admitted.Load(); ns != 0 {
			t := time.Unix(0, ns).UTC()
			c.AdmittedAt = &t
		}
		st.Clients = append(st.Clients, c)
	}
	return st, nil
}

// activityStatus is the activity log's state, or nil without one.
func (s *Server) activityStatus() *activity.Status {
	if s.activity == nil {
		return nil
	}
	st := s.activity.Status()
	return &st
}

// clientPeers returns the welcomed clients, by connection number.
func (s *Server) clientPeers() []*peer {
	s.mu.Lock()
	var out []*peer
	for p := range s.peers {
		if p.role() == wire.RoleClient {
			out = append(out, p)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *peer) int { return cmp.Compare(a.id, b.id) })
	return out
}

// OwnerStopParams is the params of owner.stop: Conn names the client; 0
// (or absent) stops every client.
type OwnerStopParams struct {
	Conn uint64 `json:"conn,omitempty"`
}

func (s *Server) ownerStop(_ context.Context, params json.RawMessage) (any, error) {
	var in OwnerStopParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	n := 0
	for _, svc := range s.services {
		if o, ok := svc.(service.Overseen); ok {
			n += o.Stop(in.Conn)
		}
	}
	s.log.Info("the owner pressed Stop", "conn", in.Conn, "grants_ended", n)
	return map[string]int{"stopped": n}, nil
}

// OwnerLogParams is the params of owner.log (activity.Query).
type OwnerLogParams struct {
	Agent  string `json:"agent,omitempty"`
	Conn   uint64 `json:"conn,omitempty"`
	Tab    string `json:"tab,omitempty"`
	Origin string `json:"origin,omitempty"`
	Since  uint64 `json:"since,omitempty"`
	Before uint64 `json:"before,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

func (s *Server) ownerLog(_ context.Context, params json.RawMessage) (any, error) {
	var in OwnerLogParams
	if err := decodeStrict(params, &in); err != nil {
		return nil, err
	}
	if in.Limit < 0 || in.Limit > activity.MaxQuery || len(in.Agent) > activity.MaxLabel*4 || len(in.Tab) > activity.MaxTab*4 ||
		len(in.Origin) > activity.MaxOrigin*4 {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	if s.activity == nil {
		return activity.Page{Entries: []activity.Entry{}}, nil
	}
	page := s.activity.Query(activity.Query{Agent: in.Agent, Conn: in.Conn, Tab: in.Tab, Origin: in.Origin,
		Since: in.Since, Before: in.Before, Limit: in.Limit})
	// Keep the answer within what the browser accepts from its host.
	size := 0
	for i, e := range page.Entries {
		b, _ := json.Marshal(e)
		if size += len(b) + 1; size > maxOwnerLogBytes {
			page.Entries, page.More = page.Entries[:i], true
			break
		}
	}
	return page, nil
}

// openConsole serves broker.console: it asks the owner's browser to show
// its console.
func (s *Server) openConsole(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	for _, p := range s.consoles() {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := p.Call(cctx, wire.ConsoleOpen, struct{}{})
		cancel()
		if err == nil {
			return map[string]bool{"opened": true}, nil
		}
		p.log.Info("the browser did not open its console", "err", err)
	}
	return map[string]bool{"opened": false}, nil
}

// decodeStrict decodes params into v: unknown fields or trailing data are
// INVALID_REQUEST.
func decodeStrict(params json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		return wire.Err(wire.CodeInvalidRequest)
	}
	return nil
}
