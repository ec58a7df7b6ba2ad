package agentsock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/dsh-browser/broker/admission"
	"github.com/dsh-browser/broker/term/agentapi"
)

// known lists every agent method of the spec.
var known = map[string]bool{
	agentapi.MethodHello:                 true,
	agentapi.MethodSessions:              true,
	agentapi.MethodListTabs:              true,
	agentapi.MethodSwitchTab:             true,
	agentapi.MethodOpenTab:               true,
	agentapi.MethodNavigationAffordances: true,
	agentapi.MethodRequestAttention:      true,
	agentapi.MethodSnapshot:              true,
	agentapi.MethodAffordances:           true,
	agentapi.MethodStatus:                true,
	agentapi.MethodRequestControl:        true,
	agentapi.MethodReleaseControl:        true,
	agentapi.MethodType:                  true,
	agentapi.MethodSendKey:               true,
	agentapi.MethodInterrupt:             true,
	agentapi.MethodCheckApproval:         true,
	agentapi.MethodControlRequestState:   true,
	agentapi.MethodProposalState:         true,
	agentapi.MethodExecState:             true,
}

// decodeParams reads params strictly into v; absent params leave v zero.
func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return agentapi.Errorf(agentapi.CodeInvalidInput, "params: %v", err)
	}
	return nil
}

func (c *conn) hello(r *request) (json.RawMessage, error) {
	var p agentapi.HelloParams
	if err := decodeParams(r.params, &p); err != nil {
		return nil, err
	}
	switch p.Kind {
	case "agent":
	case "human", "frontend":
		c.s.refuse("hello with an owner kind", "conn", c.id, "kind", p.Kind)
		return nil, agentapi.Errorf(agentapi.CodeOwnerRequired, "kind %q belongs to the owner's own bridge; agents say kind \"agent\"", p.Kind)
	default:
		return nil, agentapi.Errorf(agentapi.CodeInvalidInput, "kind must be \"agent\"")
	}
	if len(p.Name) > MaxLabel || len(p.AgentID) > MaxLabel {
		return nil, agentapi.Errorf(agentapi.CodeInvalidInput, "name and agentId are at most %d bytes", MaxLabel)
	}
	label := cleanLabel(p.Name)
	if label == "" {
		label = cleanLabel(p.AgentID)
	}
	c.mu.Lock()
	if c.helloed {
		c.mu.Unlock()
		return nil, agentapi.Errorf(agentapi.CodeInvalidInput, "hello was already said; identity is immutable for a connection")
	}
	c.helloed, c.label, c.ticket = true, label, admission.New()
	if c.s.cfg.Admission == AdmissionOpen {
		c.ticket.Decide(true)
	}
	st, _ := c.ticket.State()
	pending := st == admission.Pending
	c.mu.Unlock()
	c.s.signalPeers()
	if pending {
		return json.Marshal(agentapi.HelloPending{ProtocolVersion: agentapi.ProtocolVersion, Conn: c.id, Kind: "agent", Admission: string(admission.Pending)})
	}
	res := agentapi.HelloResult{ProtocolVersion: agentapi.ProtocolVersion, Conn: c.id, Kind: "agent", Admission: string(admission.Granted)}
	if v, st, _ := c.bind(); v != nil {
		id, mode, eff := st.ID, st.Mode, effectiveMode(st)
		res.Session, res.Mode, res.EffectiveMode = &id, &mode, &eff
		if c.s.attendedSession() == id {
			res.Attended = &id
		}
	}
	return json.Marshal(res)
}

// cleanLabel keeps a label printable for the owner bar.
func cleanLabel(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s))
}

func effectiveMode(st *agentapi.State) string {
	if !st.ProcessAlive {
		return agentapi.ModeObserve
	}
	return st.Mode
}

// bind returns the session the connection is bound to, binding it first
// to the attended session (else the first) it participates in if it is
// bound nowhere. The view is nil when there is none; participating says
// whether the bound session still includes the connection.
func (c *conn) bind() (*view, *agentapi.State, bool) {
	c.mu.Lock()
	bound := c.bound
	c.mu.Unlock()
	if bound != "" {
		return c.s.lookup(bound, c.id)
	}
	states := c.s.participating(c.id)
	if len(states) == 0 {
		return nil, nil, false
	}
	pick := states[0].ID
	att := c.s.attendedSession()
	for _, st := range states {
		if st.ID == att {
			pick = st.ID
		}
	}
	c.mu.Lock()
	if c.bound == "" {
		c.bound = pick
	}
	bound = c.bound
	c.mu.Unlock()
	return c.s.lookup(bound, c.id)
}

// handle runs one admitted request and queues its answer.
func (c *conn) handle(r *request) {
	ctx := c.readCtx
	if !agentapi.Reads[r.method] {
		ctx = c.ctx
	}
	c.mu.Lock()
	t := c.ticket
	c.mu.Unlock()
	if err := t.Await(ctx, agentapi.Discovery[r.method]); err != nil {
		switch {
		case errors.Is(err, admission.ErrPending):
			err = agentapi.Errorf(agentapi.CodeAdmissionPending, "the owner has not admitted this connection yet")
		case errors.Is(err, admission.ErrDenied):
			err = agentapi.Errorf(agentapi.CodeAdmissionDenied, "the owner refused this connection")
		}
		c.respond(r.id, nil, nil, err)
		return
	}
	res, check, err := c.dispatch(ctx, r)
	c.respond(r.id, res, check, err)
}

func (c *conn) dispatch(ctx context.Context, r *request) (json.RawMessage, *boundary, error) {
	switch r.method {
	case agentapi.MethodSessions, agentapi.MethodListTabs:
		res, err := c.sessions()
		return res, nil, err
	case agentapi.MethodNavigationAffordances:
		res, err := json.Marshal(c.navigation())
		return res, nil, err
	case agentapi.MethodSwitchTab:
		return c.switchTab(r)
	case agentapi.MethodOpenTab:
		return c.openTab(ctx, r)
	case agentapi.MethodStatus:
		return c.status(ctx, r)
	case agentapi.MethodAffordances:
		return c.affordances(ctx, r)
	}
	return c.route(ctx, r)
}

// target returns the session a request is for: the one it names, else
// the bound one.
func (c *conn) target(r *request) (*view, error) {
	if r.session != "" {
		v, _, ok := c.s.lookup(r.session, c.id)
		if !ok {
			return nil, agentapi.Unavailable(fmt.Sprintf("named session %q is unknown or not shared with connection %d", r.session, c.id))
		}
		return v, nil
	}
	v, _, ok := c.bind()
	switch {
	case v == nil && c.boundID() != "":
		return nil, agentapi.Unavailable(fmt.Sprintf("bound session %q is gone", c.boundID()))
	case v == nil:
		return nil, agentapi.Errorf(agentapi.CodeNotAvailable, "no shared session is available to this connection yet; wait for tools_changed")
	case !ok:
		return nil, agentapi.Unavailable(fmt.Sprintf("bound session %q is not shared with connection %d", v.sess.ID(), c.id))
	}
	return v, nil
}

func (c *conn) boundID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bound
}

func (c *conn) agentRequest(r *request) agentapi.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return agentapi.Request{Conn: c.id, Label: c.label, Method: r.method, Params: r.params}
}

// route runs a session method in the target session.
func (c *conn) route(ctx context.Context, r *request) (json.RawMessage, *boundary, error) {
	v, err := c.target(r)
	if err != nil {
		return nil, nil, err
	}
	id := v.sess.ID()
	if r.method == agentapi.MethodRequestControl {
		// One session at a time: asking here gives up what this connection
		// holds everywhere else.
		for _, other := range c.s.others(id) {
			other.Release(c.id)
		}
	}
	rep, err := v.sess.Call(ctx, c.agentRequest(r))
	if err != nil {
		return nil, nil, err
	}
	return rep.Result, &boundary{session: id, gen: rep.Generation, surface: rep.Surface}, nil
}

func (c *conn) sessions() (json.RawMessage, error) {
	bound := c.boundID()
	att := c.s.attendedSession()
	res := agentapi.SessionsResult{Sessions: []agentapi.SessionInfo{}}
	for i, st := range c.s.participating(c.id) {
		res.Sessions = append(res.Sessions, agentapi.SessionInfo{
			ID: st.ID, Index: i + 1, Title: st.Title, Mode: st.Mode,
			Bound: st.ID == bound, Attended: st.ID == att,
		})
		if st.ID == bound {
			res.Bound = &st.ID
		}
		if st.ID == att {
			res.Attended = &st.ID
		}
	}
	res.Count = len(res.Sessions)
	return json.Marshal(res)
}

func (c *conn) navigation() agentapi.NavigationResult {
	res := agentapi.NavigationResult{Destinations: []string{}}
	bound := c.boundID()
	var src *agentapi.State
	if bound != "" {
		if _, st, ok := c.s.lookup(bound, c.id); ok {
			src = st
		}
	}
	for _, st := range c.s.participating(c.id) {
		if st.IsMasked(agentapi.MethodSwitchTab) {
			continue
		}
		res.Destinations = append(res.Destinations, st.ID)
		if st.ID != bound {
			res.SwitchTab = true
		}
	}
	if src != nil && src.IsMasked(agentapi.MethodSwitchTab) {
		res.SwitchTab = false
	}
	res.OpenTab = c.s.cfg.Opener != nil && (src == nil || !src.IsMasked(agentapi.MethodOpenTab))
	return res
}

// leave gives up what the connection holds in the session it is leaving.
func (c *conn) leave(from, to string) {
	if from == "" || from == to {
		return
	}
	if v, _, _ := c.s.lookup(from, c.id); v != nil {
		v.sess.Release(c.id)
	}
}

func (c *conn) switchTab(r *request) (json.RawMessage, *boundary, error) {
	var p agentapi.SwitchTabParams
	if err := decodeParams(r.params, &p); err != nil {
		return nil, nil, err
	}
	var dest string
	var n int
	if json.Unmarshal(p.Tab, &dest) != nil {
		if json.Unmarshal(p.Tab, &n) != nil {
			return nil, nil, agentapi.Errorf(agentapi.CodeInvalidInput, "tab is a number from sessions or a session ID")
		}
		states := c.s.participating(c.id)
		if n < 1 || n > len(states) {
			return nil, nil, agentapi.Errorf(agentapi.CodeNotFound, "no tab %d; sessions lists %d", n, len(states))
		}
		dest = states[n-1].ID
	}
	_, dst, ok := c.s.lookup(dest, c.id)
	if !ok {
		return nil, nil, agentapi.Unavailable(fmt.Sprintf("switch_tab to %q, which is unknown or not shared with connection %d", dest, c.id))
	}
	from := c.boundID()
	if _, src, live := c.s.lookup(from, c.id); live && src.IsMasked(agentapi.MethodSwitchTab) {
		return nil, nil, agentapi.Errorf(agentapi.CodeMasked, "the owner keeps this connection in its tab")
	}
	if dst.IsMasked(agentapi.MethodSwitchTab) {
		return nil, nil, agentapi.Errorf(agentapi.CodeMasked, "the owner does not let agents switch to that tab")
	}
	c.leave(from, dest)
	c.mu.Lock()
	c.bound = dest
	c.mu.Unlock()
	res, err := json.Marshal(agentapi.BindingResult{Session: dest, Mode: dst.Mode, EffectiveMode: effectiveMode(dst)})
	return res, nil, err
}

func (c *conn) openTab(ctx context.Context, r *request) (json.RawMessage, *boundary, error) {
	var p agentapi.ReasonParams
	if err := decodeParams(r.params, &p); err != nil {
		return nil, nil, err
	}
	if c.s.cfg.Opener == nil {
		return nil, nil, agentapi.Errorf(agentapi.CodeUnsupported, "no host here can open a tab")
	}
	from := c.boundID()
	if _, src, live := c.s.lookup(from, c.id); live && src.IsMasked(agentapi.MethodOpenTab) {
		return nil, nil, agentapi.Errorf(agentapi.CodeMasked, "the owner does not let agents open tabs from this one")
	}
	c.mu.Lock()
	open := OpenRequest{Conn: c.id, Label: c.label, From: from}
	c.mu.Unlock()
	if p.Reason != nil {
		open.Reason = *p.Reason
	}
	id, err := c.s.cfg.Opener.Open(ctx, open)
	if err != nil {
		return nil, nil, agentapi.Errorf(agentapi.CodeNotAvailable, "the tab could not be opened: %v", err)
	}
	_, st, ok := c.s.lookup(id, c.id)
	if !ok {
		return nil, nil, agentapi.Unavailable(fmt.Sprintf("opened tab %q is not shared with connection %d", id, c.id))
	}
	c.leave(from, id)
	c.mu.Lock()
	c.bound = id
	c.mu.Unlock()
	res, err := json.Marshal(agentapi.BindingResult{Session: id, Mode: st.Mode, EffectiveMode: effectiveMode(st)})
	return res, nil, err
}

func (c *conn) status(ctx context.Context, r *request) (json.RawMessage, *boundary, error) {
	v, _, ok := c.bind()
	if r.session != "" {
		v, _, ok = c.s.lookup(r.session, c.id)
	}
	if v == nil || !ok {
		res := agentapi.StatusResult{}
		if v != nil {
			id := v.sess.ID()
			res.Session = &id
		}
		raw, err := json.Marshal(res)
		return raw, nil, err
	}
	rep, err := v.sess.Call(ctx, c.agentRequest(r))
	if err != nil {
		return nil, nil, err
	}
	var res agentapi.StatusResult
	if err := json.Unmarshal(rep.Result, &res); err != nil {
		return nil, nil, err
	}
	res.Attended = c.s.attendedSession() == v.sess.ID()
	raw, err := json.Marshal(res)
	return raw, &boundary{session: v.sess.ID(), gen: rep.Generation}, err
}

func (c *conn) affordances(ctx context.Context, r *request) (json.RawMessage, *boundary, error) {
	nav := c.navigation()
	tools := []string{agentapi.MethodAffordances, agentapi.MethodListTabs, agentapi.MethodNavigationAffordances, agentapi.MethodSessions, agentapi.MethodStatus}
	if nav.SwitchTab {
		tools = append(tools, agentapi.MethodSwitchTab)
	}
	if nav.OpenTab {
		tools = append(tools, agentapi.MethodOpenTab)
	}
	res := agentapi.AffordancesResult{}
	var check *boundary
	v, _, ok := c.bind()
	if r.session != "" {
		v, _, ok = c.s.lookup(r.session, c.id)
	}
	if v != nil && ok {
		rep, err := v.sess.Call(ctx, c.agentRequest(r))
		if err != nil {
			return nil, nil, err
		}
		var sr agentapi.AffordancesResult
		if err := json.Unmarshal(rep.Result, &sr); err != nil {
			return nil, nil, err
		}
		res.Session = sr.Session
		for _, t := range sr.Tools {
			if !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
		check = &boundary{session: v.sess.ID(), gen: rep.Generation}
	}
	slices.Sort(tools)
	res.Tools = tools
	raw, err := json.Marshal(res)
	return raw, check, err
}
