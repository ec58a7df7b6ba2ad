package agentsock_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

// A client pipelines requests and closes its write side: what only reads
// is answered; what would write, request control or move the binding is
// answered connection_closing and does not run.
func TestHalfCloseAnswersReadsAndRefusesWrites(t *testing.T) {
	sc := session.Config{Mode: agentapi.ModeAutopilot, OpenControl: true}
	_, _, s, a, conn := sharedSession(t, agentsock.Config{}, sc)
	a.Must("request_control", nil, nil)
	a.Must("type", map[string]any{"text": "echo before-close"}, nil)
	termtest.WaitSessionText(t, s, "$ echo before-close")

	release := agentsock.HoldReads(conn)
	batch := []struct {
		method string
		params any
		code   string // "" for an answer
	}{
		{"status", nil, ""},
		{"send_key", map[string]any{"key": "Enter"}, "connection_closing"},
		{"snapshot", nil, ""},
		{"type", map[string]any{"text": "echo after-close"}, "connection_closing"},
		{"sessions", nil, ""},
		{"switch_tab", map[string]any{"tab": 1}, "connection_closing"},
		{"request_control", nil, "connection_closing"},
		{"request_attention", nil, "connection_closing"},
		{"interrupt", nil, "connection_closing"},
		{"exec_state", map[string]any{"execId": "t1.e999"}, "not_found"},
		{"affordances", nil, ""},
	}
	var lines []string
	for i, r := range batch {
		lines = append(lines, fmt.Sprintf(`{"id":%d,"method":%q,"params":%s}`, 100+i, r.method, jsonOf(r.params)))
	}
	a.Send(strings.Join(lines, "\n"))
	a.CloseWrite()
	release()
	for i, r := range batch {
		m := a.Response(fmt.Sprint(100 + i))
		if m.Code() != r.code {
			t.Errorf("%s after the close: %s, want %q", r.method, m.Raw, r.code)
		}
	}
	a.WaitClosed()
	// Nothing of it ran, and the lease went with the connection.
	if st := s.Bar(); st.Controller != "you" {
		t.Fatalf("controller after the close: %q", st.Controller)
	}
	if strings.Contains(strings.Join(s.Screen(), "\n"), "before-close\nbefore-close") {
		t.Fatal("the Enter ran after the close")
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// A write waiting for the owner when the client closes its side ends at
// once: it is answered connection_closing and the owner is no longer asked.
func TestHalfCloseEndsWaitingWrites(t *testing.T) {
	_, _, s, a, conn := sharedSession(t, agentsock.Config{}, session.Config{})
	id := a.Request("request_control", map[string]any{"reason": "waiting"})
	termtest.WaitQuestion(t, s, session.AskControl, conn)
	a.CloseWrite()
	if m := a.Response(id); m.Code() != "connection_closing" {
		t.Fatalf("the waiting request_control got %s", m.Raw)
	}
	deadline := time.Now().Add(termtest.Timeout)
	for len(s.Questions()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the owner is still asked: %+v", s.Questions())
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.WaitClosed()
}

// When sharing stops, what was produced under the old boundary and not yet
// written is withheld: queued snapshots become surface_unavailable, and no
// screen content reaches the agent after the revocation.
func TestRevocationDropsQueuedContent(t *testing.T) {
	var trace lockedBuffer
	srv, path := termtest.StartServer(t, agentsock.Config{RateBurst: 100000, MaxInFlight: 100000, MaxQueued: 256 << 20, TraceRefusals: true, Logger: traceLog(&trace)})
	s := termtest.Headless(t, srv, session.Config{ID: "t1", Rows: 80, Cols: 240})
	s.Share(true)
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw := newRawClient(t, c)
	conn := raw.hello("queued")
	termtest.WaitQuestion(t, s, session.AskAdmission, conn)
	s.Answer(true)
	raw.waitEvent("tools_changed")
	// Fill the screen so that each snapshot is large, ask for many, read none.
	s.OwnerInput([]byte("for i in $(seq 1 80); do printf '%0230d\\n' $i; done\r"))
	termtest.WaitSessionText(t, s, strings.Repeat("0", 228)+"80")
	const n = 100
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":%d,"method":"snapshot"}`+"\n", 1000+i)
	}
	raw.send(strings.TrimSuffix(b.String(), "\n"))
	// Wait until most answers are produced and queue behind the full
	// socket, then stop sharing, then read.
	deadline := time.Now().Add(termtest.Timeout)
	queued := 0
	for queued = agentsock.QueuedAnswers(srv, conn); queued < n/2; queued = agentsock.QueuedAnswers(srv, conn) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d answers queued", queued)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Share(false)

	// Answers arrive in the order they were written (reads run
	// concurrently, so not in request order).
	revoked := false
	withheld := 0
	for got := 0; got < n; {
		m := raw.next()
		if m.Event != "" {
			continue
		}
		got++
		switch {
		case m.Code() == "surface_unavailable":
			revoked = true
			withheld++
		case m.Code() != "":
			t.Fatalf("snapshot %s: %s", m.ID, m.Raw)
		case revoked:
			t.Fatalf("snapshot %s arrived with content after an earlier one was withheld", m.ID)
		}
	}
	if withheld < queued {
		t.Fatalf("%d snapshots withheld, but %d were queued when sharing stopped", withheld, queued)
	}
	if !strings.Contains(trace.String(), "obsolete answer withheld") {
		t.Fatal("no queued answer was withheld by the boundary check")
	}
}

// rawClient speaks to the server without reading in the background, so a
// test can leave answers unread.
type rawClient struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	seen []termtest.Msg
}

func newRawClient(t *testing.T, c net.Conn) *rawClient {
	c.SetDeadline(time.Now().Add(2 * termtest.Timeout))
	return &rawClient{t: t, c: c, r: bufio.NewReaderSize(c, 1<<20)}
}

func (r *rawClient) send(lines string) {
	r.t.Helper()
	if _, err := io.WriteString(r.c, lines+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawClient) next() termtest.Msg {
	r.t.Helper()
	line, err := r.r.ReadString('\n')
	if err != nil {
		last := ""
		if len(r.seen) > 0 {
			last = r.seen[len(r.seen)-1].Raw
		}
		r.t.Fatalf("read after %d lines (last %.200s): %v", len(r.seen), last, err)
	}
	var m termtest.Msg
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		r.t.Fatalf("line %q: %v", line, err)
	}
	m.Raw = line
	r.seen = append(r.seen, m)
	return m
}

func (r *rawClient) hello(name string) uint64 {
	r.send(`{"id":"h","method":"hello","params":{"kind":"agent","name":"` + name + `"}}`)
	m := r.readUntilID(`"h"`)
	var res agentapi.HelloPending
	json.Unmarshal(m.Result, &res)
	return res.Conn
}

func (r *rawClient) readUntilID(id string) termtest.Msg {
	r.t.Helper()
	for {
		m := r.next()
		if string(m.ID) == id {
			return m
		}
	}
}

func (r *rawClient) waitEvent(name string) termtest.Msg {
	r.t.Helper()
	for {
		if m := r.next(); m.Event == name {
			return m
		}
	}
}
