package broker

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/dsh-browser/broker/wire"
)

type method func(s *Server, ctx context.Context, p *peer, params json.RawMessage) (any, error)

// clientMethods is every method a welcomed client may call, kept sorted.
var clientMethods = map[string]method{
	"broker.status":     (*Server).status,
	"browser.instances": (*Server).instances,
	"browser.tabs":      (*Server).tabs,
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
		in := p.hello.Instance
		caps := make(map[string]bool, len(instanceFeatures))
		for _, f := range instanceFeatures {
			caps[f] = false
		}
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
	Version      string            `json:"version"`
	PID          int               `json:"pid"`
	AccessMode   string            `json:"accessMode"`
	StartedAt    time.Time         `json:"startedAt"`
	Connections  int               `json:"connections"`
	Capabilities []string          `json:"capabilities"`
	Instances    []BrowserInstance `json:"instances"`
	AllowOrigins []string          `json:"allowOrigins,omitempty"`
	MaxSockets   int               `json:"maxSockets"`
	MaxProviders int               `json:"maxProviders"`
}

func (s *Server) status(_ context.Context, _ *peer, params json.RawMessage) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	return &Status{
		Version:      s.cfg.Version,
		PID:          os.Getpid(),
		AccessMode:   s.cfg.AccessMode,
		StartedAt:    s.started.UTC().Truncate(time.Second),
		Connections:  int(s.sockets.Load()),
		Capabilities: s.caps,
		Instances:    s.instanceList(),
		AllowOrigins: s.cfg.AllowOrigins,
		MaxSockets:   s.cfg.MaxConnections,
		MaxProviders: s.cfg.MaxProviders,
	}, nil
}
