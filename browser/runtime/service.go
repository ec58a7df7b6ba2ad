package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/wire"
)

// Register returns the browser kind's service for a broker: a Runtime
// serving that broker's browser providers, its journal fencing durable
// actions.
func Register(cfg Config) service.Register {
	return func(h service.Host) (service.Service, error) {
		if cfg.Journal == nil {
			if j := h.Journal(); j != nil { // not a typed nil in the interface
				cfg.Journal = j
			}
		}
		if cfg.Logger == nil {
			cfg.Logger = h.Logger()
		}
		if o, ok := h.(service.Overseer); ok && cfg.Activity == nil {
			if a := o.Activity(); a != nil { // not a typed nil in the interface
				cfg.Activity = a
			}
		}
		if cfg.Personal && len(cfg.AllowOrigins) > 0 {
			return nil, errors.New("--allow-origin applies to restricted mode only; personal mode allows every HTTP(S) tab")
		}
		return New(cfg, h), nil
	}
}

// Kind describes browser providers.
func (r *Runtime) Kind() service.Kind {
	return service.Kind{
		Name:     browser.Kind,
		Required: browser.Required(),
		CheckInstance: func(in wire.Instance) error {
			if in.Family != browser.Family {
				return errors.New(`a browser's instance family must be "chromium"`)
			}
			return nil
		},
		OwnerQuestions: true,
	}
}

// Offers lists the browser capabilities of the welcome.
func (r *Runtime) Offers() []string {
	caps := browser.Offered()
	if r.cfg.Personal {
		caps = append(caps, browser.CapPersonalMode)
	}
	return caps
}

// Methods is the browser.* table, one line per method; each method's params
// schema comes from its type in package browser.
func (r *Runtime) Methods() map[string]service.Method {
	t := map[string]service.Method{
		browser.MethodAct:            {Handle: r.Act},
		browser.MethodBatch:          {Handle: r.Batch},
		browser.MethodCapture:        {Handle: r.Capture, ReadOnly: true},
		browser.MethodClaim:          {Handle: r.Claim},
		browser.MethodFrames:         {Handle: r.Frames, ReadOnly: true},
		browser.MethodInstances:      {Handle: r.Instances, ReadOnly: true, Discovery: true},
		browser.MethodObserve:        {Handle: r.Observe, ReadOnly: true},
		browser.MethodReadPage:       {Handle: r.ReadPage, ReadOnly: true},
		browser.MethodRelease:        {Handle: r.Release},
		browser.MethodReleaseSession: {Handle: r.ReleaseSession},
		browser.MethodTabs:           {Handle: r.Tabs, ReadOnly: true, Discovery: true},
		browser.MethodValidateLease:  {Handle: r.ValidateLease, ReadOnly: true},
	}
	for name, m := range t {
		m.Schema = browser.ParamsSchema(browser.ParamsTypes[name])
		t[name] = m
	}
	return t
}

// ProviderMethods is empty: a browser provider only answers and sends
// events.
func (r *Runtime) ProviderMethods() map[string]service.ProviderMethod { return nil }

// Joined needs nothing: a provider is found through the host when used.
func (r *Runtime) Joined(service.Provider) {}

// Gone ends every lease on a disconnected browser instance.
func (r *Runtime) Gone(p service.Provider) {
	id := p.InstanceID()
	r.leases.EndWhere(func(l *lease.Lease) bool { return l.InstanceID == id }, lease.ProviderGone)
}

// Instances lists the connected browsers, with what the broker can do with
// each.
func (r *Runtime) Instances(_ context.Context, _ Client, params json.RawMessage) (any, error) {
	var in browser.InstancesParams
	if err := decodeParams(params, &in); err != nil || textLen(in.SessionID) > 256 {
		return nil, invalid()
	}
	return r.instances(), nil
}

func (r *Runtime) instances() []browser.Instance {
	provs := r.host.Providers(browser.Kind)
	out := make([]browser.Instance, 0, len(provs))
	for _, p := range provs {
		in := p.Instance()
		caps := make(map[string]bool, len(browser.Features))
		for _, f := range browser.Features {
			caps[f] = false
		}
		caps["ax"] = true // the required capabilities
		for _, f := range []string{"dom", "keyboard", "appendText", "batch", "setChecked", "contenteditableFill", "stateExpectations"} {
			caps[f] = p.Capable(browser.CapDOMRead) // every action reads elements
		}
		caps["domScroll"] = p.Capable(browser.CapInputScroll)
		caps["wheel"] = p.Capable(browser.CapInputWheel)
		caps["tabScopedNavigation"] = p.Capable(browser.CapNavigate)
		caps["screenshot"] = p.Capable(browser.CapCapture)
		caps["frameDiscovery"] = p.Capable(browser.CapFramesList)
		caps["pageWindows"] = p.Capable(browser.CapAXPage)
		caps["sameOriginFrameRead"] = p.Capable(browser.CapFrameRead) && p.Capable(browser.CapFramesList)
		caps["sameOriginFrameQuery"] = caps["sameOriginFrameRead"]
		caps["sameOriginFrameSubtree"] = caps["sameOriginFrameRead"]
		caps["axSubtree"] = true
		caps["sameOriginFrameClick"] = caps["sameOriginFrameRead"] && p.Capable(browser.CapFrameInput)
		caps["sameOriginFramePage"] = caps["sameOriginFrameRead"] && p.Capable(browser.CapAXPage)
		out = append(out, browser.Instance{
			ID: in.ID, Family: in.Family, Brand: in.Brand, Version: in.Version,
			ProfileLabel: in.ProfileLabel, Capabilities: caps,
		})
	}
	return out
}

// Status reports the access mode, the connected browsers and the live
// leases.
func (r *Runtime) Status() any {
	live := r.leases.Live()
	st := &browser.Status{AccessMode: browser.AccessRestricted, AllowOrigins: r.cfg.AllowOrigins,
		Instances: r.instances(), Leases: make([]browser.StatusLease, 0, len(live))}
	if r.cfg.Personal {
		st.AccessMode = browser.AccessPersonal
	}
	for _, l := range live {
		st.Leases = append(st.Leases, browser.StatusLease{ID: l.ID, Tab: l.Tab, Origin: l.Origin, Scope: l.Scope,
			ExpiresAt: l.Expires.UTC().Truncate(time.Second)})
	}
	return st
}
