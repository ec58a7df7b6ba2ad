package broker

import (
	"context"
	"encoding/json"
	"github.com/dsh-browser/broker/browser"
	"os"
	"time"

	"github.com/dsh-browser/broker/wire"
)

type method func(s *Server, ctx context.Context, p *peer, params json.RawMessage) (any, error)

// runtimeMethod adapts a browser.Runtime method to the dispatch table.
func runtimeMethod(f func(*browser.Runtime, context.Context, browser.Client, json.RawMessage) (any, error)) method {
	return func(s *Server, ctx context.Context, p *peer, params json.RawMessage) (any, error) {
		return f(s.rt, ctx, p, params)
	}
}

// readOnly names the client methods that only read: a half-closed client
// still gets their answers.
var readOnly = map[string]bool{
	"broker.status":         true,
	"browser.capture":       true,
	"browser.frames":        true,
	"browser.instances":     true,
	"browser.observe":       true,
	"browser.readPage":      true,
	"browser.tabs":          true,
	"browser.validateLease": true,
}

// clientMethods is every method a welcomed client may call, kept sorted.
var clientMethods = map[string]method{
	"broker.status":          (*Server).status,
	"browser.act":            runtimeMethod((*browser.Runtime).Act),
	"browser.batch":          runtimeMethod((*browser.Runtime).Batch),
	"browser.capture":        runtimeMethod((*browser.Runtime).Capture),
	"browser.claim":          runtimeMethod((*browser.Runtime).Claim),
	"browser.frames":         runtimeMethod((*browser.Runtime).Frames),
	"browser.instances":      (*Server).instances,
	"browser.observe":        runtimeMethod((*browser.Runtime).Observe),
	"browser.readPage":       runtimeMethod((*browser.Runtime).ReadPage),
	"browser.release":        runtimeMethod((*browser.Runtime).Release),
	"browser.releaseSession": runtimeMethod((*browser.Runtime).ReleaseSession),
	"browser.tabs":           runtimeMethod((*browser.Runtime).Tabs),
	"browser.validateLease":  runtimeMethod((*browser.Runtime).ValidateLease),
}

// BrowserInstance is one connected browser, as browser.instances reports it.
type BrowserInstance struct {
	ID           string          `json:"id"`
	Family       string          `json:"family"`
	Brand        string          `json:"brand"`
	Version      string          `json:"version"`
	ProfileLabel string          `json:"profileLabel"`
	Capabilities map[string]bool `json:"capabilities"`
}

// instanceFeatures names what the broker can do with an instance, in the
// reference's vocabulary. A feature turns true in the change that implements
// it end to end.
var instanceFeatures = []string{
	"ax", "axSubtree", "dom", "screenshot", "keyboard", "keyboardShortcuts",
	"domScroll", "wheel", "setChecked", "contenteditableFill", "appendText",
	"stateExpectations", "batch", "pageWindows", "tabScopedNavigation",
	"frameDiscovery", "sameOriginFrameRead", "sameOriginFrameClick",
	"sameOriginFrameQuery", "sameOriginFrameSubtree", "sameOriginFramePage", "oopif",
}

// noParams rejects any params but an empty object.
func noParams(params json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil || len(m) != 0 {
		return wire.Err(wire.CodeInvalidRequest)
	}
	return nil
}

func (s *Server) instanceList() []BrowserInstance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]BrowserInstance, 0, len(s.providers))
	for _, p := range s.providers {
		if !p.ready {
			continue // its welcome is not out yet
		}
		in := p.hello.Instance
		caps := make(map[string]bool, len(instanceFeatures))
		for _, f := range instanceFeatures {
			caps[f] = false
		}
		for _, f := range []string{"ax", "keyboard", "appendText", "batch"} {
			caps[f] = true // on every provider: the required capabilities
		}
		caps["screenshot"] = p.Capable(browser.CapCapture)
		caps["frameDiscovery"] = p.Capable(browser.CapFramesList)
		caps["pageWindows"] = p.Capable(browser.CapAXPage)
		caps["sameOriginFrameRead"] = p.Capable(browser.CapFrameRead) && p.Capable(browser.CapFramesList)
		caps["sameOriginFrameQuery"] = caps["sameOriginFrameRead"]
		caps["sameOriginFrameClick"] = caps["sameOriginFrameRead"] && p.Capable(browser.CapFrameInput)
		caps["sameOriginFramePage"] = caps["sameOriginFrameRead"] && p.Capable(browser.CapAXPage)
		out = append(out, BrowserInstance{
			ID: in.ID, Family: in.Family, Brand: in.Brand, Version: in.Version,
			ProfileLabel: in.ProfileLabel, Capabilities: caps,
		})
	}
	return out
}

func (s *Server) instances(_ context.Context, _ *peer, params json.RawMessage) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	return s.instanceList(), nil
}

// Status is the value of broker.status: a summary for `broker status`.
type Status struct {
	Version      string             `json:"version"`
	PID          int                `json:"pid"`
	AccessMode   string             `json:"accessMode"`
	Admission    string             `json:"admission"` // open or prompt
	Pending      []StatusConnection `json:"pendingConnections"`
	StartedAt    time.Time          `json:"startedAt"`
	Connections  int                `json:"connections"`
	Capabilities []string           `json:"capabilities"`
	Instances    []BrowserInstance  `json:"instances"`
	Leases       []StatusLease      `json:"leases"`
	Journal      *JournalStatus     `json:"journal,omitempty"`
	AllowOrigins []string           `json:"allowOrigins,omitempty"`
	MaxSockets   int                `json:"maxSockets"`
	MaxProviders int                `json:"maxProviders"`
}

func (s *Server) status(_ context.Context, _ *peer, params json.RawMessage) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	return &Status{
		Version:      s.cfg.Version,
		PID:          os.Getpid(),
		AccessMode:   s.cfg.AccessMode,
		Admission:    s.cfg.Admission,
		Pending:      s.pendingList(),
		StartedAt:    s.started.UTC().Truncate(time.Second),
		Connections:  int(s.sockets.Load()),
		Capabilities: s.caps,
		Instances:    s.instanceList(),
		Leases:       s.leaseList(),
		Journal:      s.journalStatus(),
		AllowOrigins: s.cfg.AllowOrigins,
		MaxSockets:   s.cfg.MaxConnections,
		MaxProviders: s.cfg.MaxProviders,
	}, nil
}

// StatusLease is one live lease as broker.status reports it (no token).
type StatusLease struct {
	ID        string    `json:"id"`
	Tab       string    `json:"tab"`
	Origin    string    `json:"origin"`
	Scope     string    `json:"scope"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func (s *Server) leaseList() []StatusLease {
	live := s.rt.Leases()
	out := make([]StatusLease, 0, len(live))
	for _, l := range live {
		out = append(out, StatusLease{ID: l.ID, Tab: l.Tab, Origin: l.Origin, Scope: l.Scope, ExpiresAt: l.Expires.UTC().Truncate(time.Second)})
	}
	return out
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
