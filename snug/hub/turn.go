package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/agent"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/chat"
	"github.com/dsh-browser/broker/snug/contract"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/wire"
)

// Where the agent configuration lives: snug_settings keys (the spec's
// "provider, model and endpoints") and the key in snug_secrets.
const (
	settingProvider = "provider"
	settingEndpoint = "endpoint"
	settingModel    = "model"
	settingMCPHost  = "mcpHost"
	secretKey       = "byok:" + apps.AgentOpenAI
	// settingAgentUnconfirmed marks agent settings that came with an
	// imported file (spec §9: they are executable config): app turns wait
	// until the user confirms them. Only an import sets it, in its own
	// transaction, so the file cannot pre-confirm.
	settingAgentUnconfirmed = "agentUnconfirmed"
)

// defaultMaxTokens bounds a sampled reply without a contract's narrower
// maxOutputTokens (MCP sampling requires a bound).
const defaultMaxTokens = 4096

// sampler is a client connection that offered MCP sampling.
type sampler struct {
	conn uint64
	host string
}

// agentConfig is the stored configuration.
type agentConfig struct {
	provider, endpoint, model, mcpHost string
	unconfirmed                        bool
}

func (h *Hub) readAgent(ctx context.Context) (agentConfig, error) {
	db, err := h.store()
	if err != nil {
		return agentConfig{}, err
	}
	var c agentConfig
	for key, dst := range map[string]*string{settingProvider: &c.provider, settingEndpoint: &c.endpoint,
		settingModel: &c.model, settingMCPHost: &c.mcpHost} {
		raw, ok, err := db.Setting(ctx, key)
		if err != nil {
			return agentConfig{}, err
		}
		if ok {
			json.Unmarshal(raw, dst) // a value of another shape reads as absent
		}
	}
	if c.provider == "" {
		c.provider = apps.AgentNone
	}
	raw, _, err := db.Setting(ctx, settingAgentUnconfirmed)
	if err != nil {
		return agentConfig{}, err
	}
	c.unconfirmed = string(raw) == "true"
	return c, nil
}

func (h *Hub) agentInfo(ctx context.Context) (apps.Agent, error) {
	c, err := h.readAgent(ctx)
	if err != nil {
		return apps.Agent{}, err
	}
	_, hasKey, err := h.db.Secret(ctx, secretKey)
	if err != nil {
		return apps.Agent{}, err
	}
	a := apps.Agent{Provider: c.provider, Endpoint: c.endpoint, Model: c.model, HasKey: hasKey, MCPHost: c.mcpHost, Samplers: []string{},
		Unconfirmed: c.unconfirmed}
	h.mu.Lock()
	for _, s := range h.samplers {
		a.Samplers = append(a.Samplers, s.host)
	}
	h.mu.Unlock()
	return a, nil
}

func (h *Hub) agentGet(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	a, err := h.agentInfo(ctx)
	if err != nil {
		return nil, fromDB(err)
	}
	return a, nil
}

// agentSet stores the agent configuration. An endpoint must pass
// agent.CheckEndpoint (POLICY_DENIED otherwise). The key goes to
// snug_secrets and is never read back by a client method.
func (h *Hub) agentSet(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.AgentSetParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	db, err := h.store()
	if err != nil {
		return nil, err
	}
	str := func(s string) json.RawMessage {
		if s == "" {
			return nil
		}
		b, _ := json.Marshal(s)
		return b
	}
	values := map[string]json.RawMessage{settingProvider: str(p.Provider), settingEndpoint: nil, settingModel: nil, settingMCPHost: nil,
		settingAgentUnconfirmed: nil} // settings the user chose are confirmed
	switch p.Provider {
	case apps.AgentOpenAI:
		if _, err := agent.CheckEndpoint(p.Endpoint); err != nil {
			return nil, wire.Err(wire.CodePolicyDenied)
		}
		values[settingEndpoint], values[settingModel] = str(p.Endpoint), str(p.Model)
	case apps.AgentSampling:
		values[settingMCPHost], values[settingModel] = str(p.MCPHost), str(p.Model)
	}
	if err := db.SetSettings(ctx, values); err != nil {
		return nil, fromDB(err)
	}
	if p.Provider != apps.AgentOpenAI || p.Key != "" || !p.KeepKey {
		if err := db.SetSecret(ctx, secretKey, p.Key); err != nil {
			return nil, fromDB(err)
		}
	}
	h.log.Info("agent for app turns set", "provider", p.Provider)
	for _, r := range h.runners() {
		r.showDisplay()
	}
	return h.agentGet(ctx, nil, nil)
}

// agentConfirm confirms the agent settings an import brought, exactly as
// the user saw them: settings that changed since are STALE_TARGET.
func (h *Hub) agentConfirm(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.AgentConfirmParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	db, err := h.store()
	if err != nil {
		return nil, err
	}
	c, err := h.readAgent(ctx)
	if err != nil {
		return nil, fromDB(err)
	}
	if p.Provider != c.provider || p.Endpoint != c.endpoint || p.Model != c.model || p.MCPHost != c.mcpHost {
		return nil, wire.Err(wire.CodeStaleTarget)
	}
	if err := db.SetSettings(ctx, map[string]json.RawMessage{settingAgentUnconfirmed: nil}); err != nil {
		return nil, fromDB(err)
	}
	h.log.Info("imported agent settings confirmed", "provider", c.provider, "endpoint", c.endpoint)
	for _, r := range h.runners() {
		r.showDisplay()
	}
	return h.agentGet(ctx, nil, nil)
}

// agentOffer records a client that can answer turns through its MCP host's
// sampling; it is forgotten when the connection closes.
func (h *Hub) agentOffer(_ context.Context, c service.Client, params json.RawMessage) (any, error) {
	var p apps.AgentOfferParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.samplers = append(h.samplersWithout(c.ConnID()), sampler{conn: c.ConnID(), host: p.Host})
	h.mu.Unlock()
	h.log.Info("an MCP host offers sampling for app turns", "host", p.Host, "client", c.Label())
	for _, r := range h.runners() {
		r.showDisplay()
	}
	return map[string]bool{"accepted": true}, nil
}

func (h *Hub) samplersWithout(conn uint64) []sampler {
	out := h.samplers[:0:0]
	for _, s := range h.samplers {
		if s.conn != conn {
			out = append(out, s)
		}
	}
	return out
}

// agentReady reports whether an app turn would reach an agent now.
func (h *Hub) agentReady() bool {
	_, err := h.agent(context.Background())
	return err == nil
}

// errNoAgent: app turns have nowhere to go.
var errNoAgent = errors.New("no agent")

// errAgentUnconfirmed: the agent settings came with an imported file and
// wait for the user's confirmation.
var errAgentUnconfirmed = errors.New("the agent settings are unconfirmed")

// agent returns the agent of the configuration, or a frame error that
// says what to do.
func (h *Hub) agent(ctx context.Context) (agent.Agent, error) {
	c, err := h.readAgent(ctx)
	if err != nil {
		return nil, err
	}
	if c.unconfirmed && c.provider != apps.AgentNone {
		return nil, errAgentUnconfirmed
	}
	switch c.provider {
	case apps.AgentOpenAI:
		u, err := agent.CheckEndpoint(c.endpoint)
		if err != nil {
			return nil, errNoAgent
		}
		key, _, err := h.db.Secret(ctx, secretKey)
		if err != nil {
			return nil, err
		}
		return &agent.OpenAI{URL: u, Model: c.model, Key: key, Client: h.cfg.HTTPClient}, nil
	case apps.AgentSampling:
		h.mu.Lock()
		defer h.mu.Unlock()
		for i := len(h.samplers) - 1; i >= 0; i-- {
			s := h.samplers[i]
			if c.mcpHost == "" || strings.EqualFold(c.mcpHost, s.host) {
				return &sampling{h: h, conn: s.conn}, nil
			}
		}
	}
	return nil, errNoAgent
}

// sampling answers a turn through a client's MCP host (apps.MethodSample).
type sampling struct {
	h    *Hub
	conn uint64
}

func (s *sampling) Answer(ctx context.Context, t agent.Turn, onDelta func(string)) (string, error) {
	c := s.h.host.Client(s.conn)
	if c == nil {
		return "", &agent.Error{Code: agent.CodeNetwork, Retryable: true, Message: "the MCP host that offered sampling is gone"}
	}
	if t.MaxTokens == 0 {
		t.MaxTokens = defaultMaxTokens
	}
	raw, err := c.Call(ctx, apps.MethodSample, apps.SampleParams{System: t.System, User: t.User, MaxTokens: t.MaxTokens})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &agent.Error{Code: agent.CodeHost, Retryable: true, Message: "the MCP host did not answer the sampling request"}
	}
	var res apps.SampleResult
	if json.Unmarshal(raw, &res) != nil || len(res.Text) > agent.MaxReplyBytes {
		return "", &agent.Error{Code: agent.CodeHost, Message: "the MCP host's sampling answer is not usable"}
	}
	if onDelta != nil && res.Text != "" {
		onDelta(res.Text) // sampling answers whole: one streaming frame
	}
	return res.Text, nil
}

// turn answers an app-message through the user's agent (see the package
// comment). The Pending ends it exactly once, whatever happens: a cancel
// or supersede ends its context, which ends the agent's request.
func (r *runner) turn(p *frame.Pending, m *frame.AppMessage) {
	defer p.Close()
	budget := r.h.budget(r.appID)
	if budget.Exhausted() {
		p.Fail(chat.ExhaustedError())
		return
	}
	ctx := p.Context()
	ag, err := r.h.agent(ctx)
	if err != nil {
		msg := "no agent is configured for app turns: run `broker app agent --endpoint URL --model M`, or `broker app agent --mcp` with an MCP host that supports sampling"
		switch {
		case errors.Is(err, errAgentUnconfirmed):
			msg = "the agent settings came with an imported file and wait for your confirmation: check them with `broker app agent`, then run `broker app agent --confirm`"
		case !errors.Is(err, errNoAgent):
			msg = "the agent configuration cannot be read"
		}
		p.Fail(frame.ResponseError{Code: frame.CodeHostError, Message: msg})
		return
	}
	text, err := chat.EnvelopeFor(m).Text()
	if err != nil {
		p.Fail(frame.ResponseError{Code: frame.CodeHostError, Message: "the request cannot be put in a chat envelope"})
		return
	}
	r.mu.Lock()
	terms := r.terms
	r.mu.Unlock()
	t := agent.Turn{System: contract.Instructions(terms), User: text}
	if terms != nil {
		t.MaxTokens = terms.MaxOutputTokens
	}
	var onDelta func(string)
	if m.ResponseSchema == nil { // R3: streaming may be suppressed for schema-constrained requests
		onDelta = func(d string) { p.Stream(d) }
	}
	var reply string
	for attempt := 0; ; attempt++ {
		reply, err = ag.Answer(ctx, t, onDelta)
		e, ok := errors.AsType[*agent.Error](err)
		if !ok || e.Code != agent.CodeConflict || attempt == len(chat.ThreadConflictBackoff) {
			break
		}
		select {
		case <-time.After(chat.ThreadConflictBackoff[attempt]):
		case <-ctx.Done():
			return // the Pending has its answer already
		}
	}
	if err != nil {
		if e, ok := errors.AsType[*agent.Error](err); ok {
			p.Fail(frame.ResponseError{Code: e.Code, Message: e.Message, Retryable: e.Retryable})
		}
		return // otherwise the turn was cancelled or superseded: answered already
	}
	data, perr := chat.ParseReply(reply)
	if perr != nil {
		rerr, _ := errors.AsType[*chat.ReplyError](perr)
		if rerr == nil {
			rerr = &chat.ReplyError{}
		}
		p.Fail(budget.Fail(rerr))
		if budget.Exhausted() {
			r.showDisplay()
		}
		return
	}
	budget.Succeed()
	p.Respond(&frame.AppResponse{OK: true, Data: data})
}
