package agentsock_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

// sharedSession starts a server with one shared shell and an agent
// participating in it.
func sharedSession(t *testing.T, cfg agentsock.Config, sc session.Config) (*agentsock.Server, string, *session.Session, *termtest.Agent, uint64) {
	t.Helper()
	srv, path := termtest.StartServer(t, cfg)
	if sc.ID == "" {
		sc.ID = "t1"
	}
	s := termtest.Headless(t, srv, sc)
	a := termtest.Dial(t, path)
	conn := termtest.ConnOf(a.Hello("tester"))
	termtest.Admit(t, s, a, conn)
	return srv, path, s, a, conn
}

func TestSocketIsOwnerOnly(t *testing.T) {
	_, path := termtest.StartServer(t, agentsock.Config{})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode %v", fi.Mode())
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, %v", di.Mode(), err)
	}

	open, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(open)
	os.Chmod(open, 0o755)
	srv, err := agentsock.New(agentsock.Config{SocketPath: filepath.Join(open, "conn.sock")})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(t.Context()); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("serving in a directory others can enter: %v", err)
	}
}

func TestHelloRules(t *testing.T) {
	_, path := termtest.StartServer(t, agentsock.Config{Admission: agentsock.AdmissionOpen})
	a := termtest.Dial(t, path)
	a.WantCode("hello_required", "sessions", nil)
	a.WantCode("hello_required", "snapshot", nil)
	a.WantCode("owner_required", "hello", map[string]any{"kind": "human"})
	a.WantCode("owner_required", "hello", map[string]any{"kind": "frontend"})
	a.WantCode("invalid_input", "hello", map[string]any{"name": "no kind"})
	a.WantCode("invalid_input", "hello", map[string]any{"kind": "agent", "name": strings.Repeat("n", agentsock.MaxLabel+1)})
	a.WantCode("invalid_input", "hello", map[string]any{"kind": "agent", "name": "x", "role": "admin"})

	var hello agentapi.HelloResult
	a.Must("hello", map[string]any{"kind": "agent", "name": strings.Repeat("n", agentsock.MaxLabel), "agentId": "id-1"}, &hello)
	if hello.ProtocolVersion != 2 || hello.Conn == 0 || hello.Kind != "agent" || hello.Admission != "granted" ||
		hello.Session != nil || hello.Mode != nil || hello.EffectiveMode != nil || hello.Attended != nil {
		t.Fatalf("hello %+v", hello)
	}
	// Identity is immutable for the connection.
	a.WantCode("invalid_input", "hello", map[string]any{"kind": "agent", "name": "someone else"})
	for _, m := range []string{"input", "take", "set_mode", "set_sharing", "set_attended", "subscribe_output", "approve", "admission_snapshot", "sharing_state"} {
		a.WantCode("owner_required", m, nil)
	}
	a.WantCode("unsupported", "no_such_method", nil)
	a.WantCode("not_available", "snapshot", nil) // no shared session yet
	var st agentapi.StatusResult
	a.Must("status", nil, &st)
	if st.Session != nil || st.Shared || st.SurfaceAvailable {
		t.Fatalf("status without a session %+v", st)
	}
}

// Malformed and oversized lines are answered and skipped; the connection
// stays usable. A line of exactly MaxLine bytes is read, one byte more is
// not.
func TestBadLines(t *testing.T) {
	_, path := termtest.StartServer(t, agentsock.Config{Admission: agentsock.AdmissionOpen})
	a := termtest.Dial(t, path)
	a.Hello("liner")
	a.Send("this is not json")
	a.Send(`["an", "array"]`)
	a.Send(`{"method":"status"}`)
	a.Send(`{"id":{"an":"object"},"method":"status"}`)
	a.Send(`{"id":7,"params":{}}`)
	a.Send("")    // blank lines are skipped silently
	a.Send("   ") // so are spaces
	for i, m := range a.NullResponses(4) {
		if m.Code() != "parse" {
			t.Fatalf("bad line %d answered %s", i, m.Raw)
		}
	}
	if m := a.Response("7"); m.Code() != "parse" {
		t.Fatalf("request without method: %s", m.Raw)
	}
	a.Send(`{"id":8,"method":"status","params":[1]}`)
	if m := a.Response("8"); m.Code() != "invalid_input" {
		t.Fatalf("array params: %s", m.Raw)
	}

	line := func(id string, size int) string {
		head := `{"id":` + id + `,"method":"status","params":{}}`
		return head + strings.Repeat(" ", size-len(head))
	}
	a.Send(line("9", agentsock.DefaultMaxLine))
	if m := a.Response("9"); m.Error != nil {
		t.Fatalf("a line at the limit: %s", m.Raw)
	}
	a.Send(line("10", agentsock.DefaultMaxLine+1))
	a.Send(`{"id":11,"method":"status"}`)
	if m := a.Response("11"); m.Error != nil {
		t.Fatalf("the line after an oversized one: %s", m.Raw)
	}
	if a.Answered("10") {
		t.Fatal("an oversized line was read as a request")
	}
	if ms := a.NullResponses(5); ms[4].Code() != "parse" || !strings.Contains(ms[4].Error.Message, "longer than") {
		t.Fatalf("oversized line answered %s", ms[4].Raw)
	}
}

// One agent's flood of requests and garbage is answered in full and does
// not keep another agent from being served.
func TestFloodDoesNotHarmOthers(t *testing.T) {
	_, path, s, calm, _ := sharedSession(t, agentsock.Config{}, session.Config{})
	flood := termtest.Dial(t, path)
	termtest.Admit(t, s, flood, termtest.ConnOf(flood.Hello("flood")))

	const n = 1000
	var b bytes.Buffer
	for i := range n {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, `{"id":%d,"method":"snapshot"}`+"\n", i+1000)
		case 1:
			fmt.Fprintf(&b, `{"id":%d,"method":"status"}`+"\n", i+1000)
		default:
			b.WriteString("}garbage{\n")
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		flood.Send(strings.TrimSuffix(b.String(), "\n"))
	}()
	for range 20 {
		if m := calm.Call("snapshot", nil); m.Error != nil {
			t.Fatalf("the calm agent got %s during the flood", m.Raw)
		}
	}
	<-done
	limited := 0
	for i := range n {
		if i%3 == 2 {
			continue
		}
		m := flood.Response(fmt.Sprint(i + 1000))
		switch m.Code() {
		case "":
		case "rate_limited":
			limited++
		default:
			t.Fatalf("flood request %d: %s", i, m.Raw)
		}
	}
	flood.NullResponses(n / 3)
	if limited == 0 {
		t.Fatal("a flood of 2,000 requests was never rate limited")
	}
}

// Exactly RateBurst requests pass at once, the next is rate_limited; and
// no more than MaxInFlight run or wait at a time.
func TestRateAndInFlightLimits(t *testing.T) {
	_, _, _, a, _ := sharedSession(t, agentsock.Config{RateBurst: 10, RatePerSecond: -1}, session.Config{})
	// Join used hello (not counted) and nothing else: the burst is whole.
	for i := range 10 {
		if m := a.Call("status", nil); m.Error != nil {
			t.Fatalf("request %d within the burst: %s", i+1, m.Raw)
		}
	}
	a.WantCode("rate_limited", "status", nil)

	_, _, s, b, conn := sharedSession(t, agentsock.Config{MaxInFlight: 2}, session.Config{})
	waiting := b.Request("request_control", nil) // waits for the owner
	termtest.WaitQuestion(t, s, session.AskControl, conn)
	queued := b.Request("type", map[string]any{"text": "x"}) // waits behind it
	b.WantCode("rate_limited", "status", nil)
	s.Answer(true)
	if m := b.Response(waiting); m.Error != nil {
		t.Fatalf("request_control: %s", m.Raw)
	}
	if m := b.Response(queued); m.Error != nil {
		t.Fatalf("the queued type: %s", m.Raw)
	}
	if m := b.Call("status", nil); m.Error != nil {
		t.Fatalf("status once the requests ended: %s", m.Raw)
	}
}

// A client that does not read its answers is closed once MaxQueued bytes
// wait for it; it cannot be answered truthfully any more.
func TestUnreadAnswersCloseTheConnection(t *testing.T) {
	var trace lockedBuffer
	srv, path := termtest.StartServer(t, agentsock.Config{MaxQueued: 64 << 10, RateBurst: 100000, MaxInFlight: 100000, Admission: agentsock.AdmissionOpen, TraceRefusals: true, Logger: traceLog(&trace)})
	s := termtest.Headless(t, srv, session.Config{ID: "t1", Rows: 80, Cols: 240})
	s.OwnerInput([]byte("for i in $(seq 1 80); do printf '%0230d\\n' $i; done\r")) // large snapshots
	termtest.WaitSessionText(t, s, strings.Repeat("0", 228)+"80")
	s.Share(true)
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	fmt.Fprintln(c, `{"id":1,"method":"hello","params":{"kind":"agent","name":"deaf"}}`)
	line, err := r.ReadString('\n')
	var hello struct {
		Result agentapi.HelloResult `json:"result"`
	}
	if err != nil || json.Unmarshal([]byte(line), &hello) != nil || hello.Result.Admission != "granted" {
		t.Fatalf("hello: %q %v", line, err)
	}
	termtest.WaitQuestion(t, s, session.AskJoin, hello.Result.Conn)
	s.Answer(true)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"tools_changed"`) {
			break
		}
	}
	// Ask for far more than MaxQueued and read none of it until the
	// server has let go of the connection.
	const n = 100
	go func() {
		for i := range n {
			if _, err := fmt.Fprintf(c, `{"id":%d,"method":"snapshot"}`+"\n", i+100); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(termtest.Timeout)
	for agentsock.Connected(srv, hello.Result.Conn) {
		if time.Now().After(deadline) {
			t.Fatalf("the server kept the connection of a client that does not read; trace:\n%s", trace.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(trace.String(), "does not read its answers") {
		t.Fatalf("closed for another reason; trace:\n%s", trace.String())
	}
	c.SetReadDeadline(time.Now().Add(termtest.Timeout))
	answers := 0
	for {
		if _, err := r.ReadString('\n'); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the connection stayed open")
			}
			break
		}
		answers++
	}
	if answers >= n {
		t.Fatalf("all %d answers arrived; nothing was queued", answers)
	}
}

func TestRefusalsAreTracedNotTold(t *testing.T) {
	var trace lockedBuffer
	srv, path := termtest.StartServer(t, agentsock.Config{Admission: agentsock.AdmissionOpen, TraceRefusals: true, Logger: traceLog(&trace)})
	s := termtest.Headless(t, srv, session.Config{ID: "t1"})
	a := termtest.Dial(t, path)
	conn := termtest.ConnOf(a.Hello("snoop"))
	m := a.WantCode("surface_unavailable", "snapshot", map[string]any{"session": "t1"})
	if strings.Contains(m.Error.Message, "private") || strings.Contains(m.Raw, "reason") {
		t.Fatalf("the refusal told its reason: %s", m.Raw)
	}
	want := fmt.Sprintf(`refused: named session \"t1\" is unknown or not shared with connection %d" socket=agent conn=%d code=surface_unavailable`, conn, conn)
	if got := trace.String(); !strings.Contains(got, want) {
		t.Fatalf("trace %q", got)
	}
	// Shared, but not with this connection: the same answer.
	s.Share(true)
	before := len(trace.String())
	a.WantCode("surface_unavailable", "snapshot", map[string]any{"session": "t1"})
	if got := trace.String()[before:]; !strings.Contains(got, want) {
		t.Fatalf("trace %q", got)
	}

	var quiet lockedBuffer
	srv2, path2 := termtest.StartServer(t, agentsock.Config{Admission: agentsock.AdmissionOpen, Logger: traceLog(&quiet)})
	termtest.Headless(t, srv2, session.Config{ID: "t1"})
	b := termtest.Dial(t, path2)
	b.Hello("snoop")
	b.WantCode("surface_unavailable", "snapshot", map[string]any{"session": "t1"})
	if os.Getenv("CONN_TRACE_REFUSALS") != "1" && os.Getenv("DSH_TRACE_REFUSALS") != "1" && quiet.String() != "" {
		t.Fatalf("traced without CONN_TRACE_REFUSALS: %q", quiet.String())
	}
}

// traceLog is a logger of warn level and above, as traced refusals are.
func traceLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The spec's 64 KiB bound on a control request's original payload, at the
// limit and one byte past it.
func TestOriginalRequestLimit(t *testing.T) {
	_, _, s, a, conn := sharedSession(t, agentsock.Config{}, session.Config{OpenControl: true})
	const overhead = len(`{"method":"request_control","params":{"command":""}}`)
	big := strings.Repeat("c", agentapi.MaxOriginalRequest-overhead)
	var res agentapi.ControlResult
	a.Must("request_control", map[string]any{"command": big}, &res)
	if whole, _ := json.Marshal(res.OriginalRequest); len(whole) != agentapi.MaxOriginalRequest {
		t.Fatalf("original request is %d bytes", len(whole))
	}
	a.Must("release_control", nil, nil)
	a.WantCode("invalid_input", "request_control", map[string]any{"command": big + "c"})
	a.WantCode("invalid_input", "request_control", map[string]any{"reason": 42})
	a.WantCode("invalid_input", "request_control", map[string]any{"command": []string{"ls"}})
	_ = s
	_ = conn
}

// MaxConnections sockets are served; one more is closed at once, and a
// place that comes free is taken again.
func TestConnectionLimit(t *testing.T) {
	var trace lockedBuffer
	_, path := termtest.StartServer(t, agentsock.Config{MaxConnections: 2, Admission: agentsock.AdmissionOpen, TraceRefusals: true, Logger: traceLog(&trace)})
	a := termtest.Dial(t, path)
	a.Hello("one")
	b := termtest.Dial(t, path)
	b.Hello("two")
	served := func() bool {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(termtest.Timeout))
		fmt.Fprintln(c, `{"id":1,"method":"hello","params":{"kind":"agent"}}`)
		line, err := bufio.NewReader(c).ReadString('\n')
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("neither served nor closed")
		}
		return err == nil && strings.Contains(line, `"granted"`)
	}
	if served() {
		t.Fatal("a third connection was served")
	}
	if !strings.Contains(trace.String(), `connection limit reached" socket=agent limit=2`) {
		t.Fatalf("trace %q", trace.String())
	}
	a.Close()
	deadline := time.Now().Add(termtest.Timeout)
	for !served() {
		if time.Now().After(deadline) {
			t.Fatal("no connection was served after one closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A request that waits for admission goes through the moment the owner
// allows the connection (into a shared session): the first real call
// succeeds right after Allow, and tools_changed tells the agent.
func TestFirstCallSucceedsRightAfterAllow(t *testing.T) {
	srv, path := termtest.StartServer(t, agentsock.Config{})
	s := termtest.Headless(t, srv, session.Config{ID: "t1"})
	s.Share(true)
	a := termtest.Dial(t, path)
	conn := termtest.ConnOf(a.Hello("eager"))
	waiting := a.Request("snapshot", nil)
	termtest.WaitQuestion(t, s, session.AskAdmission, conn)
	if a.Answered(waiting) {
		t.Fatal("snapshot answered before the owner allowed the connection")
	}
	s.Answer(true)
	snap := termtest.Result[agentapi.Snapshot](t, a.Response(waiting))
	if !strings.HasPrefix(snap.SurfaceID, "t1:") {
		t.Fatalf("snapshot %+v", snap)
	}
	a.WaitEvent("tools_changed", nil)
	var list agentapi.SessionsResult
	a.Must("sessions", nil, &list)
	if list.Count != 1 || list.Bound == nil || *list.Bound != "t1" || list.Attended == nil {
		t.Fatalf("sessions after allow: %+v", list)
	}
}
