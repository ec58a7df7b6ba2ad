package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/dsh-browser/broker/activity"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// route is a client method and the service that serves it (nil for the
// broker's own).
type route struct {
	service.Method
	svc    service.Service
	params *paramsCheck // Method.Schema's, or nil
}

// paramsCheck checks params against a method's compiled schema, and
// remembers the params text it accepted: the verdict is a function of the
// text alone, so the same text needs no second check. Clients repeat their
// params (a session, an instance, a tab), and the check was the largest
// single cost of the broker's own in a browser.tabs round trip (a tenth of
// its CPU, a fifth of its allocations).
type paramsCheck struct {
	schema *jsonschema.Schema

	mu       sync.RWMutex
	accepted map[string]struct{} // params text the schema accepted
}

// Bounds of what a paramsCheck remembers: texts up to maxRememberedParams
// bytes, and at most maxRememberedTexts of them, forgotten all at once when
// full.
const (
	maxRememberedParams = 512
	maxRememberedTexts  = 256
)

// check reports why params do not match the schema, or nil.
func (c *paramsCheck) check(params json.RawMessage) error {
	c.mu.RLock()
	_, known := c.accepted[string(params)]
	c.mu.RUnlock()
	if known {
		return nil
	}
	doc, err := wire.DecodeValue(params) // as jsonschema.UnmarshalJSON, without its decoder
	if err == nil {
		err = c.schema.Validate(doc)
	}
	if err != nil || len(params) > maxRememberedParams {
		return err
	}
	c.mu.Lock()
	if len(c.accepted) >= maxRememberedTexts {
		clear(c.accepted)
	}
	c.accepted[string(params)] = struct{}{}
	c.mu.Unlock()
	return nil
}

// compileParams compiles a method's params schema.
func compileParams(method string, schema json.RawMessage) (*paramsCheck, error) {
	if schema == nil {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("broker: params schema of %s: %w", method, err)
	}
	c := jsonschema.NewCompiler()
	url := "urn:dsh:params:" + method
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("broker: params schema of %s: %w", method, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("broker: params schema of %s: %w", method, err)
	}
	return &paramsCheck{schema: s, accepted: make(map[string]struct{})}, nil
}

// brokerMethods are the broker's own client methods.
func brokerMethods() map[string]route {
	return map[string]route{
		"broker.status": {Method: service.Method{ReadOnly: true, Discovery: true}},
	}
}

// call validates a client method's params against its schema, runs it and
// turns its error into a wire error.
func (s *Server) call(ctx context.Context, p *peer, req *rpc.Request, m route) (any, error) {
	if m.params != nil {
		if err := m.params.check(req.Params); err != nil {
			s.refuse("params do not match the method's schema", "conn", p.id, "method", req.Method, "err", err)
			return nil, wire.Err(wire.CodeInvalidRequest)
		}
	}
	var v any
	var err error
	if m.Handle != nil {
		v, err = m.Handle(ctx, p, req.Params)
	} else {
		v, err = s.status(req.Params) // the one broker method with no service
	}
	return v, s.wireError(err, req.Method, p)
}

// wireError returns err as the wire will carry it: a *wire.Error as is,
// the end of the request's context as CANCELLED, and anything else — an
// error no handler expected — as INTERNAL_ERROR, logged here once with its
// cause so it is never lost.
func (s *Server) wireError(err error, method string, p *peer) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*wire.Error](err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err // rpc answers CANCELLED
	}
	p.log.Error("internal error", "method", method, "err", err)
	return wire.Err(wire.CodeInternalError)
}

// The service.Host side of the server.

// Provider returns the ready provider of an instance, or nil.
func (s *Server) Provider(instanceID string) service.Provider {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.providers {
		if p.ready && p.state.Load().hello.Instance.ID == instanceID {
			return p
		}
	}
	return nil
}

// Providers returns the ready providers of a kind, in joining order.
func (s *Server) Providers(kind string) []service.Provider {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []service.Provider
	for _, p := range s.providers {
		if p.ready && p.state.Load().hello.ProviderKind() == kind {
			out = append(out, p)
		}
	}
	return out
}

// Client returns the live client connection with this ID, or nil.
func (s *Server) Client(conn uint64) service.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.peers {
		if p.id == conn && p.role() == wire.RoleClient {
			return p
		}
	}
	return nil
}

// Journal returns the action journal, or nil without a state directory.
func (s *Server) Journal() *journal.Journal { return s.journal }

// Logger returns the broker's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// noParams rejects any params but an empty object.
func noParams(params json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil || len(m) != 0 {
		return wire.Err(wire.CodeInvalidRequest)
	}
	return nil
}

// Status is the value of broker.status: a summary for `broker status`.
// Services holds each provider kind's own section, by kind.
type Status struct {
	Version            string                     `json:"version"`
	PID                int                        `json:"pid"`
	Admission          string                     `json:"admission"` // open or prompt
	Pending            []StatusConnection         `json:"pendingConnections"`
	StartedAt          time.Time                  `json:"startedAt"`
	Connections        int                        `json:"connections"`
	Goroutines         int                        `json:"goroutines"` // the daemon's, for spotting leaks
	Capabilities       []string                   `json:"capabilities"`
	Providers          map[string]int             `json:"providers"` // connected, by kind
	Services           map[string]json.RawMessage `json:"services"`
	Journal            *JournalStatus             `json:"journal,omitempty"`
	Activity           *activity.Status           `json:"activity,omitempty"` // the owner's activity log
	MaxSockets         int                        `json:"maxSockets"`
	MaxUnauthenticated int                        `json:"maxUnauthenticated"`
	MaxProviders       int                        `json:"maxProviders"`
}

func (s *Server) status(params json.RawMessage) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	st := &Status{
		Version:            s.cfg.Version,
		PID:                os.Getpid(),
		Admission:          s.cfg.Admission,
		Pending:            s.pendingList(),
		StartedAt:          s.started.UTC().Truncate(time.Second),
		Connections:        int(s.sockets.Load()),
		Goroutines:         runtime.NumGoroutine(),
		Capabilities:       slices.Clone(s.caps),
		Providers:          make(map[string]int),
		Services:           make(map[string]json.RawMessage),
		Journal:            s.journalStatus(),
		Activity:           s.activityStatus(),
		MaxSockets:         s.cfg.MaxConnections,
		MaxUnauthenticated: s.cfg.MaxUnauthenticated,
		MaxProviders:       s.cfg.MaxProviders,
	}
	for kind, svc := range s.kinds {
		st.Providers[kind] = len(s.Providers(kind))
		raw, err := json.Marshal(svc.Status())
		if err != nil {
			return nil, err
		}
		st.Services[kind] = raw
	}
	return st, nil
}

// JournalStatus is the journal's state as broker.status reports it.
type JournalStatus struct {
	Path      string `json:"path"`
	Entries   int    `json:"entries"`
	Uncertain int    `json:"uncertain"` // intent recorded, outcome never recorded
	Problem   string `json:"problem,omitempty"`
	Fix       string `json:"fix,omitempty"`
	Notice    string `json:"notice,omitempty"` // though available: an old journal set aside
}

func (s *Server) journalStatus() *JournalStatus {
	if s.journal == nil {
		return nil
	}
	st := s.journal.Status()
	js := &JournalStatus{Path: st.Path, Entries: st.Entries, Uncertain: st.Reserved, Notice: st.Notice}
	if st.Problem != nil {
		js.Problem, js.Fix = st.Problem.Reason, st.Problem.Fix
	}
	return js
}
