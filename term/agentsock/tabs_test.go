package agentsock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

// opener opens a new tab as a host would: a new session, shared with the
// connection that asked. Its sessions are real shells.
type opener struct {
	t   *testing.T
	srv *agentsock.Server
	mu  sync.Mutex
	n   int
}

func (o *opener) Open(_ context.Context, req agentsock.OpenRequest) (string, error) {
	o.mu.Lock()
	o.n++
	id := fmt.Sprintf("new%d", o.n)
	o.mu.Unlock()
	s := termtest.Headless(o.t, o.srv, session.Config{ID: id})
	s.ShareWith(req.Conn)
	return id, nil
}

func TestTabs(t *testing.T) {
	op := &opener{t: t}
	srv, path := termtest.StartServer(t, agentsock.Config{Opener: op})
	op.srv = srv
	t1 := termtest.Headless(t, srv, session.Config{ID: "t1", OpenControl: true})
	t2 := termtest.Headless(t, srv, session.Config{ID: "t2", OpenControl: true, Masked: []string{"switch_tab", "open_tab"}})
	t3 := termtest.Headless(t, srv, session.Config{ID: "t3"})
	a := termtest.Dial(t, path)
	conn := termtest.ConnOf(a.Hello("navigator"))
	termtest.Admit(t, t1, a, conn) // admission, and t1
	termtest.Admit(t, t2, a, conn) // joining t2
	t3.Share(true)                 // shared, but not with this agent

	var list agentapi.SessionsResult
	a.Must("list_tabs", nil, &list)
	if list.Count != 2 || list.Sessions[0].ID != "t1" || list.Sessions[1].ID != "t2" || list.Bound == nil || *list.Bound != "t1" {
		t.Fatalf("list_tabs %+v", list)
	}
	var nav agentapi.NavigationResult
	a.Must("navigation_affordances", nil, &nav)
	if nav.SwitchTab || !nav.OpenTab || strings.Join(nav.Destinations, ",") != "t1" {
		t.Fatalf("navigation from t1 (t2 masks switch_tab): %+v", nav)
	}
	a.WantCode("masked", "switch_tab", map[string]any{"tab": 2}) // the destination refuses
	a.WantCode("surface_unavailable", "switch_tab", map[string]any{"tab": "t3"})
	a.WantCode("surface_unavailable", "switch_tab", map[string]any{"tab": "nope"})
	a.WantCode("not_found", "switch_tab", map[string]any{"tab": 3})
	a.WantCode("invalid_input", "switch_tab", map[string]any{"tab": true})

	// A lease is held in one session at a time: asking in t2 (by name)
	// gives up t1's.
	a.Must("request_control", nil, nil)
	if t1.Bar().Controller == "you" {
		t.Fatal("no lease in t1")
	}
	a.Must("request_control", map[string]any{"session": "t2"}, nil)
	if t1.Bar().Controller != "you" || t2.Bar().Controller == "you" {
		t.Fatalf("controllers after asking in t2: t1 %q, t2 %q", t1.Bar().Controller, t2.Bar().Controller)
	}
	// Reads by name cost nothing: the binding stays on t1.
	var snap agentapi.Snapshot
	a.Must("snapshot", map[string]any{"session": "t2"}, &snap)
	if !strings.HasPrefix(snap.SurfaceID, "t2:") || !snap.Controller.You {
		t.Fatalf("snapshot of t2 by name: %+v", snap)
	}
	var st agentapi.StatusResult
	a.Must("status", nil, &st)
	if st.Session == nil || *st.Session != "t1" {
		t.Fatalf("binding moved: %+v", st)
	}

	// open_tab binds to the new tab and releases what the old one held.
	var opened agentapi.BindingResult
	a.Must("open_tab", map[string]any{"reason": "a clean shell"}, &opened)
	if !strings.HasPrefix(opened.Session, "new") || opened.Mode != agentapi.ModeCopilot {
		t.Fatalf("open_tab %+v", opened)
	}
	a.Must("status", nil, &st)
	if *st.Session != opened.Session {
		t.Fatalf("not bound to the new tab: %+v", st)
	}
	// From the new tab, switch back to t1 by number.
	var moved agentapi.BindingResult
	a.Must("switch_tab", map[string]any{"tab": 1}, &moved)
	if moved.Session != "t1" {
		t.Fatalf("switch_tab 1: %+v", moved)
	}
	// From t2, whose owner masks navigation, the agent stays put.
	a.Must("switch_tab", map[string]any{"tab": "t1"}, nil)
	b := termtest.Dial(t, path)
	bconn := termtest.ConnOf(b.Hello("pinned"))
	termtest.Admit(t, t2, b, bconn)
	b.Must("status", nil, &st)
	if *st.Session != "t2" {
		t.Fatalf("b bound to %v", *st.Session)
	}
	b.WantCode("masked", "open_tab", nil)

	// A closed tab: its agents learn, and the binding is unavailable.
	t1.Close()
	a.WaitEvent("tools_changed", func(m termtest.Msg) bool { return string(m.Params) == "{}" })
	a.WantCode("surface_unavailable", "snapshot", nil)
}

// Without a host opener, open_tab is unsupported.
func TestOpenTabNeedsAnOpener(t *testing.T) {
	_, _, _, a, _ := sharedSession(t, agentsock.Config{}, session.Config{})
	a.WantCode("unsupported", "open_tab", nil)
	var nav agentapi.NavigationResult
	a.Must("navigation_affordances", nil, &nav)
	if nav.OpenTab {
		t.Fatal("open_tab offered without an opener")
	}
}

// Every event an agent receives is one of the spec's, tagged with its
// session when it is about one; the program's output never is.
func TestOutputIsNeverAnEvent(t *testing.T) {
	sc := session.Config{Mode: agentapi.ModeAutopilot, OpenControl: true}
	_, _, s, a, _ := sharedSession(t, agentsock.Config{}, sc)
	a.Must("request_control", nil, nil)
	a.Must("type", map[string]any{"text": "echo OUTPUT-MARKER-$((40+2)); seq 1 500"}, nil)
	a.Must("send_key", map[string]any{"key": "Enter"}, nil)
	termtest.WaitSessionText(t, s, "500\n$")
	s.SetMode(agentapi.ModeCopilot)
	a.WaitEvent("mode_changed", nil)
	allowed := map[string]bool{"tools_changed": true, "mode_changed": true, "control_revoked": true, "control_request": true,
		"approval": true, "proposal": true, "exec": true, "attention": true}
	for _, e := range a.Events() {
		if !allowed[e.Event] {
			t.Fatalf("unexpected event %s", e.Raw)
		}
		if strings.Contains(e.Raw, "OUTPUT-MARKER-42") || strings.Contains(e.Raw, "499") {
			t.Fatalf("program output in an event: %s", e.Raw)
		}
		if e.Event != "tools_changed" && !strings.Contains(string(e.Params), `"session":"t1"`) {
			t.Fatalf("event without its session: %s", e.Raw)
		}
	}
}
