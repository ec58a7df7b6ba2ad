package hub_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/snug/agent/agenttest"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/chat"
)

const secret = "sk-live-0123456789SECRETabcdef"

// turnEnv is an app in a runner tab with the stub agent configured.
type turnEnv struct {
	e     *env
	c     *client.Client
	h     *runnerHost
	tb    *tab
	ins   string
	stub  *agenttest.Server
	appID string
}

func newTurnEnv(t *testing.T, contractJSON string, replies ...agenttest.Reply) *turnEnv {
	t.Helper()
	te := &turnEnv{e: start(t, ""), stub: agenttest.New(replies...)}
	t.Cleanup(te.stub.Close)
	te.c = te.e.client(client.Options{})
	extra := map[string]any{}
	if contractJSON != "" {
		extra["runtimeContract"] = contractJSON
	}
	te.appID = install(t, te.c, notes, extra).App.ID
	a := call[apps.Agent](t, te.c, apps.MethodAgentSet, apps.AgentSetParams{Provider: apps.AgentOpenAI, Endpoint: te.stub.BaseURL(), Model: "stub-model", Key: secret})
	if !a.HasKey || a.Provider != apps.AgentOpenAI || a.Model != "stub-model" {
		t.Fatalf("agent %+v", a)
	}
	te.h = te.e.dialRunnerHost()
	te.tb = te.h.attach("tab", te.appID)
	te.ins = te.h.ready(te.tb)
	return te
}

// ask sends an app-message and returns its requestId.
func (te *turnEnv) ask(extra map[string]any) string {
	id := nextID()
	m := map[string]any{"v": 1, "type": "snug:app-message", "requestId": id, "instanceId": te.ins, "appId": "app", "action": "summarise",
		"payload": map[string]any{"text": "hello"}}
	for k, v := range extra {
		m[k] = v
	}
	te.h.sendJSON("tab", m)
	return id
}

func (te *turnEnv) terminal(t *testing.T, id string) map[string]any {
	t.Helper()
	var out map[string]any
	te.tb.wait(t, apps.PieceFrame, func(b []byte) bool {
		var f map[string]any
		json.Unmarshal(b, &f)
		if f["type"] == "snug:app-response" && f["requestId"] == id && f["streaming"] != true {
			out = f
			return true
		}
		return false
	})
	return out
}

func (te *turnEnv) streamed(id string) []string {
	var texts []string
	for _, f := range te.tb.frames() {
		if f["type"] == "snug:app-response" && f["requestId"] == id && f["streaming"] == true {
			texts = append(texts, f["text"].(string))
		}
	}
	return texts
}

func errCode(f map[string]any) string {
	e, _ := f["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// TestTurnStreamsAndAnswers: cumulative streaming frames, then one
// terminal frame with the parsed object; the agent got the generic
// instructions, the envelope and the key, and the key went nowhere else.
func TestTurnStreamsAndAnswers(t *testing.T) {
	reply := `Sure! {"message":"Summarised: hello","words":1}`
	te := newTurnEnv(t, "", agenttest.Reply{Text: reply})
	id := te.ask(nil)
	f := te.terminal(t, id)
	data, _ := json.Marshal(f["data"])
	if f["ok"] != true || string(data) != `{"message":"Summarised: hello","words":1}` {
		t.Fatalf("terminal %v", f)
	}
	texts := te.streamed(id)
	if len(texts) < 2 || texts[len(texts)-1] != reply {
		t.Fatalf("streaming frames %q", texts)
	}
	for i := 1; i < len(texts); i++ {
		if !strings.HasPrefix(texts[i], texts[i-1]) {
			t.Fatalf("streaming frames not cumulative: %q then %q", texts[i-1], texts[i])
		}
	}
	req := te.stub.Requests()[0]
	env, err := chat.ParseEnvelope(req.User)
	if err != nil || env.RequestID != id || env.InstanceID != te.ins || env.Action != "summarise" || string(env.Payload) != `{"text":"hello"}` {
		t.Fatalf("envelope %+v %v", env, err)
	}
	if !strings.Contains(req.System, "ONLY one JSON object") || req.Authorization != "Bearer "+secret || req.Model != "stub-model" || req.MaxTokens != 0 {
		t.Fatalf("request %+v", req)
	}
	// The key is in no frame, no piece, no log line, no answer.
	for _, m := range te.tb.messages {
		if strings.Contains(string(m.data), secret) {
			t.Fatalf("the key reached the tab in a %s message", m.kind)
		}
	}
	raw, _ := callErr(te.c, apps.MethodAgentGet, map[string]any{})
	st, _ := callErr(te.c, "broker.status", nil)
	if strings.Contains(string(raw), secret) || strings.Contains(string(st), secret) || strings.Contains(te.e.log.String(), secret) {
		t.Fatal("the key is in an answer or the log")
	}
}

func TestTurnUnderAContract(t *testing.T) {
	te := newTurnEnv(t, `{"overview":"Summarises reading notes.","maxOutputTokens":300}`, agenttest.Reply{Text: `{"message":"ok"}`})
	id := te.ask(map[string]any{"responseSchema": map[string]any{"type": "object"}})
	if f := te.terminal(t, id); f["ok"] != true {
		t.Fatalf("terminal %v", f)
	}
	req := te.stub.Requests()[0]
	if !strings.Contains(req.System, "Summarises reading notes.") || req.MaxTokens != 300 {
		t.Fatalf("request %+v", req)
	}
	if s := te.streamed(id); len(s) != 0 {
		t.Fatalf("a schema-constrained request streamed %q", s)
	}
}

func TestNoAgentConfigured(t *testing.T) {
	te := newTurnEnv(t, "")
	call[apps.Agent](t, te.c, apps.MethodAgentSet, apps.AgentSetParams{Provider: apps.AgentNone})
	f := te.terminal(t, te.ask(nil))
	if errCode(f) != "HOST_ERROR" || !strings.Contains(f["error"].(map[string]any)["message"].(string), "broker app agent") {
		t.Fatalf("terminal %v", f)
	}
	// Storage works without an agent.
	id := nextID()
	te.h.sendJSON("tab", map[string]any{"v": 1, "type": "snug:db-request", "requestId": id, "instanceId": te.ins, "op": "kvSet", "key": "k", "value": 1})
	if r := te.tb.frameOf(t, "snug:db-response", id); r["ok"] != true {
		t.Fatalf("kvSet without an agent: %v", r)
	}
	if a := call[apps.Agent](t, te.c, apps.MethodAgentGet, map[string]any{}); a.HasKey {
		t.Fatal("choosing no agent kept the key")
	}
}

func TestCancelAndSupersede(t *testing.T) {
	te := newTurnEnv(t, "", agenttest.Reply{Chunks: []string{`{"message":`}, Hold: true})
	id := te.ask(nil)
	te.tb.frameOf(t, "snug:app-response", id) // the first streaming frame
	te.h.sendJSON("tab", map[string]any{"v": 1, "type": "snug:app-cancel", "requestId": id, "instanceId": te.ins})
	if f := te.terminal(t, id); errCode(f) != "CANCELLED" {
		t.Fatalf("after cancel: %v", f)
	}
	waitFor(t, func() bool { return te.stub.Abandoned() == 1 }, "the agent request was not abandoned")

	// The first announce since the load is acknowledged; a second one
	// supersedes what is in flight (R4).
	announce := map[string]any{"v": 1, "type": "snug:app-announce", "appId": "a", "displayName": "again"}
	te.h.sendJSON("tab", announce)
	te.tb.frameOf(t, "snug:host-ready", "")
	id = te.ask(nil)
	te.tb.frameOf(t, "snug:app-response", id)
	te.h.sendJSON("tab", announce)
	if f := te.terminal(t, id); errCode(f) != "SUPERSEDED" {
		t.Fatalf("after a re-announce: %v", f)
	}
	waitFor(t, func() bool { return te.stub.Abandoned() == 2 }, "the superseded request was not abandoned")
}

func TestParseFailureBudget(t *testing.T) {
	long := strings.Repeat("no json here ", 40)
	te := newTurnEnv(t, "", agenttest.Reply{Text: long})
	for want := 2; want >= 0; want-- {
		f := te.terminal(t, te.ask(nil))
		e := f["error"].(map[string]any)
		if errCode(f) != "PARSE_FAILED" || e["attemptsRemaining"] != float64(want) || len([]rune(e["rawExcerpt"].(string))) > 200 ||
			!strings.HasPrefix(long, e["rawExcerpt"].(string)) || e["retryable"] != (want > 0) {
			t.Fatalf("failure with %d left: %v", want, f)
		}
	}
	var d apps.Display
	json.Unmarshal(te.tb.wait(t, apps.PieceApp, func(b []byte) bool { return strings.Contains(string(b), `"agentBlocked":true`) }), &d)
	// Exhausted: refused without calling the agent.
	n := len(te.stub.Requests())
	if f := te.terminal(t, te.ask(nil)); errCode(f) != "PARSE_FAILED" || len(te.stub.Requests()) != n {
		t.Fatalf("exhausted: %v, agent called %d times", f, len(te.stub.Requests())-n)
	}
	// The user's explicit reset.
	te.stub.Script(agenttest.Reply{Text: `{"message":"back"}`})
	te.h.conn.Notify(apps.EventResetAgent, apps.RunnerParams{Runner: "tab"})
	te.tb.wait(t, apps.PieceApp, func(b []byte) bool { return strings.Contains(string(b), `"agentBlocked":false`) })
	if f := te.terminal(t, te.ask(nil)); f["ok"] != true {
		t.Fatalf("after reset: %v", f)
	}
}

func TestThreadConflictBackoff(t *testing.T) {
	te := newTurnEnv(t, "", agenttest.Reply{Status: http.StatusConflict}, agenttest.Reply{Status: http.StatusConflict}, agenttest.Reply{Text: `{"message":"ok"}`})
	start := time.Now()
	if f := te.terminal(t, te.ask(nil)); f["ok"] != true {
		t.Fatalf("after two conflicts: %v", f)
	}
	if n := len(te.stub.Requests()); n != 3 || time.Since(start) < 350*time.Millisecond {
		t.Fatalf("%d requests in %v, want 3 after 100+250 ms", n, time.Since(start))
	}
	te.stub.Script(agenttest.Reply{Status: http.StatusConflict})
	if f := te.terminal(t, te.ask(nil)); errCode(f) != "THREAD_CONFLICT" {
		t.Fatalf("after four conflicts: %v", f)
	}
	if n := len(te.stub.Requests()); n != 3+4 {
		t.Fatalf("%d requests, want the first and three retries", n-3)
	}
}

// TestSampling: app turns through a client whose MCP host samples.
func TestSampling(t *testing.T) {
	te := newTurnEnv(t, "")
	var mu sync.Mutex
	var got apps.SampleParams
	sc := te.e.client(client.Options{OnRequest: func(_ context.Context, method string, params json.RawMessage) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		json.Unmarshal(params, &got)
		return apps.SampleResult{Text: "```json\n{\"message\":\"sampled\"}\n```"}, nil
	}})
	call[apps.Agent](t, te.c, apps.MethodAgentSet, apps.AgentSetParams{Provider: apps.AgentSampling, MCPHost: "test-host"})
	// Nobody offers yet.
	if f := te.terminal(t, te.ask(nil)); errCode(f) != "HOST_ERROR" {
		t.Fatalf("before the offer: %v", f)
	}
	call[map[string]bool](t, sc, apps.MethodAgentOffer, apps.AgentOfferParams{Host: "test-host"})
	id := te.ask(nil)
	f := te.terminal(t, id)
	if data, _ := json.Marshal(f["data"]); string(data) != `{"message":"sampled"}` {
		t.Fatalf("sampled turn: %v", f)
	}
	mu.Lock()
	if !strings.Contains(got.User, id) || !strings.Contains(got.System, "ONLY one JSON object") || got.MaxTokens != 4096 {
		t.Fatalf("sample params %+v", got)
	}
	mu.Unlock()
	if a := call[apps.Agent](t, te.c, apps.MethodAgentGet, map[string]any{}); len(a.Samplers) != 1 || a.Samplers[0] != "test-host" || a.HasKey {
		t.Fatalf("agent %+v", a)
	}
	// The offer goes with its connection.
	sc.Close()
	waitFor(t, func() bool {
		return len(call[apps.Agent](t, te.c, apps.MethodAgentGet, map[string]any{}).Samplers) == 0
	}, "the offer outlived its connection")
}

func waitFor(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
