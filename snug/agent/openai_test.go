package agent_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/snug/agent"
	"github.com/dsh-browser/broker/snug/agent/agenttest"
)

func endpoint(t *testing.T, s *agenttest.Server) string {
	t.Helper()
	u, err := agent.CheckEndpoint(s.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestStreamsAndSendsTheTurn(t *testing.T) {
	const reply = `{"message":"Three habits kept — nice week! ✓"}`
	s := agenttest.New(agenttest.Reply{Text: reply})
	defer s.Close()
	o := &agent.OpenAI{URL: endpoint(t, s), Model: "small", Key: "sk-test-key"}
	var deltas []string
	got, err := o.Answer(context.Background(), agent.Turn{System: "sys", User: "[SNUG_APP_REQUEST]\n{}", MaxTokens: 300},
		func(d string) { deltas = append(deltas, d) })
	if err != nil || got != reply {
		t.Fatalf("answer %q %v", got, err)
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != reply {
		t.Fatalf("deltas %q", deltas)
	}
	req := s.Requests()[0]
	if req.Authorization != "Bearer sk-test-key" || req.Model != "small" || req.System != "sys" ||
		req.User != "[SNUG_APP_REQUEST]\n{}" || req.MaxTokens != 300 || !req.Stream {
		t.Fatalf("request %+v", req)
	}
}

func TestNoKeyNoHeader(t *testing.T) {
	s := agenttest.New(agenttest.Reply{Text: "{}", Plain: true})
	defer s.Close()
	got, err := (&agent.OpenAI{URL: endpoint(t, s)}).Answer(context.Background(), agent.Turn{}, nil)
	if err != nil || got != "{}" || s.Requests()[0].Authorization != "" {
		t.Fatalf("%q %v %+v", got, err, s.Requests())
	}
}

func TestStatusCodes(t *testing.T) {
	for _, c := range []struct {
		status    int
		code      string
		retryable bool
	}{
		{http.StatusConflict, agent.CodeConflict, true},
		{http.StatusUnauthorized, agent.CodeHost, false},
		{http.StatusTooManyRequests, agent.CodeNetwork, true},
		{http.StatusBadGateway, agent.CodeNetwork, true},
		{http.StatusBadRequest, agent.CodeHost, false},
	} {
		s := agenttest.New(agenttest.Reply{Status: c.status})
		_, err := (&agent.OpenAI{URL: endpoint(t, s), Key: "sk-secret-xyz"}).Answer(context.Background(), agent.Turn{}, nil)
		s.Close()
		e, ok := errors.AsType[*agent.Error](err)
		if !ok || e.Code != c.code || e.Retryable != c.retryable {
			t.Errorf("HTTP %d: %v, want %s retryable %v", c.status, err, c.code, c.retryable)
		}
		if strings.Contains(err.Error(), "sk-secret-xyz") {
			t.Errorf("HTTP %d: the key is in the error", c.status)
		}
	}
}

func TestUnreachableIsANetworkError(t *testing.T) {
	s := agenttest.New()
	u := endpoint(t, s)
	s.Close() // nothing listens there now
	_, err := (&agent.OpenAI{URL: u}).Answer(context.Background(), agent.Turn{}, nil)
	if e, ok := errors.AsType[*agent.Error](err); !ok || e.Code != agent.CodeNetwork || !e.Retryable {
		t.Fatalf("%v", err)
	}
}

func TestCancelStopsTheRequest(t *testing.T) {
	s := agenttest.New(agenttest.Reply{Chunks: []string{"{"}, Hold: true})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := (&agent.OpenAI{URL: endpoint(t, s)}).Answer(ctx, agent.Turn{}, func(string) { close(first) })
		done <- err
	}()
	<-first
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Abandoned() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server never saw the client leave")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReplyBound(t *testing.T) {
	at := strings.Repeat("a", agent.MaxReplyBytes)
	s := agenttest.New(agenttest.Reply{Chunks: []string{at[:agent.MaxReplyBytes/2], at[agent.MaxReplyBytes/2:]}})
	defer s.Close()
	if got, err := (&agent.OpenAI{URL: endpoint(t, s)}).Answer(context.Background(), agent.Turn{}, nil); err != nil || len(got) != agent.MaxReplyBytes {
		t.Fatalf("at the bound: %d %v", len(got), err)
	}
	s.Script(agenttest.Reply{Chunks: []string{at, "b"}})
	if _, err := (&agent.OpenAI{URL: endpoint(t, s)}).Answer(context.Background(), agent.Turn{}, nil); err == nil {
		t.Fatal("one byte past the bound was accepted")
	}
}

func TestCheckEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.example.com/v1":                   "https://api.example.com/v1/chat/completions",
		"https://api.example.com/v1/":                  "https://api.example.com/v1/chat/completions",
		"https://api.example.com/v1/chat/completions":  "https://api.example.com/v1/chat/completions",
		"http://127.0.0.1:8080/v1":                     "http://127.0.0.1:8080/v1/chat/completions",
		"http://[::1]:11434/v1":                        "http://[::1]:11434/v1/chat/completions",
		"http://localhost:11434/v1":                    "http://localhost:11434/v1/chat/completions",
		"http://192.168.1.20:11434/v1":                 "",
		"http://example.com/v1":                        "",
		"ftp://example.com/v1":                         "",
		"https://user:pw@api.example.com/v1":           "",
		"https://api.example.com/v1?key=sk":            "",
		"/v1/chat/completions":                         "",
		"https://api.example.com/v1#frag":              "",
		"https://api.example.com/v1/chat/completions/": "https://api.example.com/v1/chat/completions",
	} {
		got, err := agent.CheckEndpoint(in)
		if want == "" {
			if !errors.Is(err, agent.ErrEndpoint) {
				t.Errorf("%s: accepted as %s", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
}
