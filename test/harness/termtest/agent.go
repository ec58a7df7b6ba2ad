// Package termtest drives shared terminals in tests: an agent client of
// the agent socket, and the owner's terminal run on a real PTY whose other
// end the test holds, as the person's terminal emulator would.
package termtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Timeout bounds every wait in these helpers: generous, as the machine is
// shared and loaded.
var Timeout = 30 * time.Second

// Msg is one line from the server: a response or an event.
type Msg struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Event  string          `json:"event"`
	Params json.RawMessage `json:"params"`
	Raw    string          `json:"-"`
}

// Code returns the error code, or "" for a result.
func (m Msg) Code() string {
	if m.Error == nil {
		return ""
	}
	return m.Error.Code
}

// Agent is a test client of the agent socket.
type Agent struct {
	t    testing.TB
	conn *net.UnixConn
	next int

	mu        sync.Mutex
	cond      *sync.Cond
	responses map[string]Msg
	nullIDs   []Msg
	events    []Msg
	all       []Msg
	closed    bool
}

// Dial connects to the agent socket at path.
func Dial(t testing.TB, path string) *Agent {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	a := &Agent{t: t, conn: c.(*net.UnixConn), responses: map[string]Msg{}}
	a.cond = sync.NewCond(&a.mu)
	go a.read()
	t.Cleanup(func() { a.conn.Close() })
	return a
}

func (a *Agent) read() {
	sc := bufio.NewScanner(a.conn)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var m Msg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			m = Msg{Event: "!unparseable"}
		}
		m.Raw = sc.Text()
		a.mu.Lock()
		a.all = append(a.all, m)
		switch {
		case m.Event != "":
			a.events = append(a.events, m)
		case len(m.ID) == 0 || string(m.ID) == "null":
			a.nullIDs = append(a.nullIDs, m)
		default:
			a.responses[string(m.ID)] = m
		}
		a.cond.Broadcast()
		a.mu.Unlock()
	}
	a.mu.Lock()
	a.closed = true
	a.cond.Broadcast()
	a.mu.Unlock()
}

// waitLocked waits on the condition until done() or the timeout; it
// reports whether done() became true.
func (a *Agent) wait(done func() bool) bool {
	deadline := time.Now().Add(Timeout)
	t := time.AfterFunc(Timeout, func() {
		a.mu.Lock()
		a.cond.Broadcast()
		a.mu.Unlock()
	})
	defer t.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		a.cond.Wait()
	}
	return true
}

// Send writes one raw line (a newline is added).
func (a *Agent) Send(line string) {
	a.t.Helper()
	if _, err := a.conn.Write([]byte(line + "\n")); err != nil {
		a.t.Fatalf("send: %v", err)
	}
}

// Request sends a request and returns its id without waiting.
func (a *Agent) Request(method string, params any) string {
	a.t.Helper()
	a.next++
	id := strconv.Itoa(a.next)
	line, err := json.Marshal(map[string]any{"id": a.next, "method": method, "params": params})
	if err != nil {
		a.t.Fatal(err)
	}
	a.Send(string(line))
	return id
}

// Response waits for the response to id.
func (a *Agent) Response(id string) Msg {
	a.t.Helper()
	var m Msg
	if !a.wait(func() bool {
		var ok bool
		m, ok = a.responses[id]
		return ok || a.closed
	}) || m.ID == nil {
		a.t.Fatalf("no response to request %s", id)
	}
	return m
}

// Answered reports whether the response to id has arrived.
func (a *Agent) Answered(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.responses[id]
	return ok
}

// Settle waits until id is answered or the connection closed, and
// reports whether it was answered.
func (a *Agent) Settle(id string) bool {
	a.wait(func() bool {
		_, ok := a.responses[id]
		return ok || a.closed
	})
	return a.Answered(id)
}

// Call sends a request and waits for its response.
func (a *Agent) Call(method string, params any) Msg {
	a.t.Helper()
	return a.Response(a.Request(method, params))
}

// Must calls and fails the test on an error answer; the result is decoded
// into v when v is not nil.
func (a *Agent) Must(method string, params, v any) {
	a.t.Helper()
	m := a.Call(method, params)
	if m.Error != nil {
		a.t.Fatalf("%s: %s: %s", method, m.Error.Code, m.Error.Message)
	}
	if v != nil {
		if err := json.Unmarshal(m.Result, v); err != nil {
			a.t.Fatalf("%s result %s: %v", method, m.Result, err)
		}
	}
}

// WantCode calls and fails the test unless the answer is error code.
func (a *Agent) WantCode(code, method string, params any) Msg {
	a.t.Helper()
	m := a.Call(method, params)
	if m.Code() != code {
		a.t.Fatalf("%s: got %s, want error %s", method, m.Raw, code)
	}
	return m
}

// WaitEvent waits for an event named name (after the first skip events
// seen so far) for which match, if given, holds.
func (a *Agent) WaitEvent(name string, match func(Msg) bool) Msg {
	a.t.Helper()
	var got Msg
	if !a.wait(func() bool {
		for _, e := range a.events {
			if e.Event == name && (match == nil || match(e)) {
				got = e
				return true
			}
		}
		return a.closed
	}) || got.Event == "" {
		a.t.Fatalf("no %s event; events: %v", name, a.Events())
	}
	return got
}

// Events returns the events received so far.
func (a *Agent) Events() []Msg {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Msg(nil), a.events...)
}

// NullResponses waits until n responses without an id arrived and returns
// them.
func (a *Agent) NullResponses(n int) []Msg {
	a.t.Helper()
	var out []Msg
	if !a.wait(func() bool {
		out = a.nullIDs
		return len(out) >= n || a.closed
	}) || len(out) < n {
		a.t.Fatalf("%d responses without id, want %d", len(out), n)
	}
	return append([]Msg(nil), out...)
}

// WaitClosed waits until the server closed the connection.
func (a *Agent) WaitClosed() {
	a.t.Helper()
	if !a.wait(func() bool { return a.closed }) {
		a.t.Fatal("the server did not close the connection")
	}
}

// CloseWrite half-closes the connection: the server sees the end of the
// requests and still answers.
func (a *Agent) CloseWrite() {
	if err := a.conn.CloseWrite(); err != nil {
		a.t.Fatalf("close write: %v", err)
	}
}

// Close closes the connection.
func (a *Agent) Close() { a.conn.Close() }

// Hello says hello as an agent named name and returns the result.
func (a *Agent) Hello(name string) map[string]any {
	a.t.Helper()
	var res map[string]any
	a.Must("hello", map[string]any{"kind": "agent", "name": name}, &res)
	return res
}

// Conn returns the connection ID hello reported.
func ConnOf(hello map[string]any) uint64 {
	f, _ := hello["conn"].(float64)
	return uint64(f)
}

// String makes a Msg readable in failures.
func (m Msg) String() string { return fmt.Sprintf("%s", m.Raw) }
