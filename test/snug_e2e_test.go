package test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/snug/agent/agenttest"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
)

// snugCall calls a snug method on a fresh client of the stack's broker
// (the stack's own client does not survive a broker restart).
func snugCall[T any](t *testing.T, s *stack.Stack, method string, params any) T {
	t.Helper()
	c := s.B.Client(t, client.Options{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := c.Call(ctx, method, params)
	if err != nil {
		t.Fatalf("%s: %v\nbroker:\n%s", method, err, s.B.Stderr)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %s: %v", method, raw, err)
	}
	return v
}

// waitEval polls expr in target id until it is true.
func waitEval(t *testing.T, s *stack.Stack, id target.ID, expr, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !chromium.Eval[bool](t, s.Browser, id, expr) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s never held\nbroker:\n%s", what, expr, s.B.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type notebookState struct {
	InstanceID string `json:"instanceId"`
	Notes      []struct {
		Title, Body string
	} `json:"notes"`
	Visits   int             `json:"visits"`
	Streamed []string        `json:"streamed"`
	Answer   json.RawMessage `json:"answer"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func notebook(t *testing.T, s *stack.Stack, a *stack.AppTab) notebookState {
	t.Helper()
	var st notebookState
	raw := chromium.Eval[string](t, s.Browser, a.Frame, `JSON.stringify(window.notebook.state)`)
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		t.Fatalf("notebook state %s: %v", raw, err)
	}
	return st
}

// TestSnugSampleApp is the "done when": the sample app installs
// with one command, opens in the browser, announces itself on the host
// chrome, keeps rows and kv values, answers through the configured agent
// (streamed, and cancelled), and its data survives a broker restart.
func TestSnugSampleApp(t *testing.T) {
	s := stack.Start(t)
	stub := agenttest.New(agenttest.Reply{Text: `{"message":"Two notes: both about attention.","themes":["attention"]}`, Gap: 20 * time.Millisecond})
	t.Cleanup(stub.Close)

	out, errOut, code := app(t, s.B, "", "install", "--sample", "notebook")
	m := regexp.MustCompile(`as ([0-9a-f-]{36})`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("install --sample (exit %d): %s%s", code, out, errOut)
	}
	id := m[1]
	if out, errOut, code := app(t, s.B, "sk-stub-key\n", "agent", "--endpoint", stub.BaseURL(), "--model", "stub"); code != 0 {
		t.Fatalf("agent (exit %d): %s%s", code, out, errOut)
	}
	nb := s.OpenApp(t, id, "document.body.dataset.ready")

	// The host chrome shows the app's announced name and icon, outside
	// the iframe.
	waitEval(t, s, nb.Runner, `document.getElementById('name').textContent === 'Reading notes' && document.getElementById('icon').textContent === '📚'`, "announce on the chrome")
	if title := chromium.Eval[string](t, s.Browser, nb.Runner, `document.title`); title != "Reading notes" {
		t.Fatalf("runner title %q", title)
	}
	if st := notebook(t, s, nb); st.Visits != 1 || st.InstanceID != nb.Ready {
		t.Fatalf("first load: %+v", st)
	}
	chromium.Eval[any](t, s.Browser, nb.Frame, `notebook.add('Deep Work', 'attention is a muscle').then(() => notebook.add('Stolen Focus', 'it is taken from us'))`)
	if st := notebook(t, s, nb); len(st.Notes) != 2 || st.Notes[1].Title != "Stolen Focus" {
		t.Fatalf("after adding: %+v", st)
	}

	// The agent answers, streamed.
	chromium.Eval[any](t, s.Browser, nb.Frame, `notebook.summarise()`)
	st := notebook(t, s, nb)
	if st.Error != nil || !strings.Contains(string(st.Answer), "both about attention") || len(st.Streamed) < 2 {
		t.Fatalf("summary: %+v", st)
	}
	for i := 1; i < len(st.Streamed); i++ {
		if !strings.HasPrefix(st.Streamed[i], st.Streamed[i-1]) {
			t.Fatalf("streamed frames not cumulative: %q", st.Streamed)
		}
	}
	req := stub.Requests()[0]
	if !strings.Contains(req.User, "[SNUG_APP_REQUEST]") || !strings.Contains(req.User, "Deep Work") || req.Authorization != "Bearer sk-stub-key" {
		t.Fatalf("the agent was sent %+v", req)
	}

	// Cancel: the turn ends CANCELLED and the agent's request is dropped.
	stub.Script(agenttest.Reply{Chunks: []string{`{"message":"thinking`}, Hold: true})
	chromium.Eval[any](t, s.Browser, nb.Frame, `void notebook.summarise()`)
	waitEval(t, s, nb.Frame, `notebook.state.streamed.length > 0`, "a streamed frame before the cancel")
	chromium.Eval[any](t, s.Browser, nb.Frame, `notebook.cancel()`)
	waitEval(t, s, nb.Frame, `notebook.state.error !== null`, "the cancelled turn's answer")
	if st := notebook(t, s, nb); st.Error.Code != "CANCELLED" {
		t.Fatalf("after cancel: %+v", st.Error)
	}
	deadline := time.Now().Add(10 * time.Second)
	for stub.Abandoned() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the agent's request outlived the cancel")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The broker restarts: the extension reconnects, the runner reloads
	// the app, and its data is there.
	t0 := time.Now()
	s.B.Stop(t)
	t.Logf("stopped in %v", time.Since(t0))
	s.B.Start(t)
	t.Logf("started in %v", time.Since(t0))
	nb.WaitFrame(t, s, "document.body.dataset.ready", nb.Ready)
	t.Logf("reloaded in %v", time.Since(t0))
	if st := notebook(t, s, nb); st.Visits != 2 || len(st.Notes) != 2 || st.Notes[0].Title != "Deep Work" {
		t.Fatalf("after a broker restart: %+v", st)
	}
}
