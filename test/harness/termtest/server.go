package termtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
)

// StartServer runs an agent socket server on a fresh socket (its path
// kept short: sun_path is 108 bytes) and returns it with the path.
func StartServer(t testing.TB, cfg agentsock.Config) (*agentsock.Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	cfg.SocketPath = filepath.Join(dir, "conn.sock")
	srv, err := agentsock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		os.RemoveAll(dir)
	})
	deadline := time.Now().Add(Timeout)
	for {
		if _, err := os.Stat(cfg.SocketPath); err == nil {
			return srv, cfg.SocketPath
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent socket did not appear")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Join shares the owner's terminal if it is private and lets a new agent
// in the way a person would: the agent says hello, the bar asks, the
// person answers yes. It returns the agent's connection ID.
func Join(t testing.TB, o *Owner, a *Agent, name string) uint64 {
	t.Helper()
	if !o.Session().Bar().Shared {
		o.Action('s')
		o.WaitBar("shared with")
	}
	hello := a.Hello(name)
	conn := ConnOf(hello)
	if hello["admission"] == "pending" {
		o.WaitBar(name)
		o.WaitBar("asks to connect")
		o.Action('y')
	} else {
		o.WaitBar("see and use this terminal")
		o.Action('y')
	}
	a.WaitEvent("tools_changed", func(m Msg) bool { return strings.Contains(string(m.Params), `"session"`) })
	return conn
}

// Result decodes a response's result, failing on an error answer.
func Result[T any](t testing.TB, m Msg) T {
	t.Helper()
	var v T
	if m.Error != nil {
		t.Fatalf("error answer: %s", m.Raw)
	}
	if err := json.Unmarshal(m.Result, &v); err != nil {
		t.Fatalf("result %s: %v", m.Result, err)
	}
	return v
}

// SameScreen waits until the agent's snapshot equals what the person sees
// (less the bar) and returns the snapshot. Both follow the same output, so
// they agree once it has been drawn. With TERMTEST_DUMP=FILE a mismatch
// also writes everything the person's terminal received to FILE.
func SameScreen(t testing.TB, o *Owner, a *Agent) agentapi.Snapshot {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		snap := Result[agentapi.Snapshot](t, a.Call("snapshot", nil))
		screen := o.Screen()
		if slices.Equal(snap.Screen, screen[:len(screen)-1]) {
			return snap
		}
		if time.Now().After(deadline) {
			if f := os.Getenv("TERMTEST_DUMP"); f != "" {
				os.WriteFile(f, o.Received(), 0o644)
			}
			t.Fatalf("the snapshot never matched the owner's screen.\nsnapshot:\n%s\nowner:\n%s",
				strings.Join(snap.Screen, "\n"), strings.Join(screen, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Headless starts a session nobody watches through a terminal (a real
// shell in a real PTY) and attaches it to srv. Owner actions are then
// called on the session directly.
func Headless(t testing.TB, srv *agentsock.Server, cfg session.Config) *session.Session {
	t.Helper()
	if cfg.Command == nil {
		sh := Shell(t)
		cfg.Command, cfg.Env, cfg.Dir = sh.Command, sh.Env, sh.Dir
	}
	s, err := session.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if srv != nil {
		if err := srv.Attach(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Admit shares s if it is private and answers yes to the question about
// conn (admission or joining), as the owner would, then waits for the
// agent to learn it participates.
func Admit(t testing.TB, s *session.Session, a *Agent, conn uint64) {
	t.Helper()
	if !s.Bar().Shared {
		s.Share(true)
	}
	WaitQuestion(t, s, "", conn)
	s.Answer(true)
	a.WaitEvent("tools_changed", func(m Msg) bool {
		return strings.Contains(string(m.Params), `"session":"`+s.ID()+`"`)
	})
}

// WaitQuestion waits until the first question to the owner of s is of kind
// (any kind if "") about conn, and returns it.
func WaitQuestion(t testing.TB, s *session.Session, kind string, conn uint64) session.Question {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		if qs := s.Questions(); len(qs) > 0 && qs[0].Conn == conn && (kind == "" || qs[0].Kind == kind) {
			return qs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s question about conn %d; questions: %+v", kind, conn, s.Questions())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitSessionText waits until s's screen shows text.
func WaitSessionText(t testing.TB, s *session.Session, text string) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !strings.Contains(strings.Join(s.Screen(), "\n"), text) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %q; the screen is:\n%s", text, strings.Join(s.Screen(), "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
