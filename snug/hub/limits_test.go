package hub_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/hub"
	"github.com/dsh-browser/broker/wire"
)

// dbFrame returns a db-request exec frame of exactly size bytes, binding
// one string parameter padded to fit.
func dbFrame(t *testing.T, id, ins, sql string, size int) []byte {
	t.Helper()
	build := func(pad int) []byte {
		b, _ := json.Marshal(map[string]any{"v": 1, "type": "snug:db-request", "requestId": id, "instanceId": ins,
			"op": "exec", "sql": sql, "params": []any{strings.Repeat("p", pad)}})
		return b
	}
	b := build(0)
	b = build(size - len(b))
	if len(b) != size {
		t.Fatalf("built %d bytes, want %d", len(b), size)
	}
	return b
}

// TestSizeClassesThroughThePieces: a db frame of the full 8 MiB class
// crosses both ways in pieces; one byte over is answered HOST_ERROR with
// its requestId; a message past what the relay carries is discarded and
// the runner goes on serving.
func TestSizeClassesThroughThePieces(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	s := install(t, c, notes, nil)
	h := e.dialRunnerHost()
	tb := h.attach("tab", s.App.ID)
	ins := h.ready(tb)

	exec := func(sql string, params ...any) map[string]any {
		t.Helper()
		id := nextID()
		f := map[string]any{"v": 1, "type": "snug:db-request", "requestId": id, "instanceId": ins, "op": "exec", "sql": sql}
		if params != nil {
			f["params"] = params
		}
		h.sendJSON("tab", f)
		return tb.frameOf(t, "snug:db-response", id)
	}
	if r := exec("CREATE TABLE blobs (id INTEGER PRIMARY KEY, body TEXT)"); r["ok"] != true {
		t.Fatalf("create: %v", r)
	}

	// In: exactly 8 MiB.
	h.send("tab", dbFrame(t, "big-in", ins, "INSERT INTO blobs (body) VALUES (?)", frame.MaxDBFrameBytes))
	if r := tb.frameOf(t, "snug:db-response", "big-in"); r["ok"] != true {
		t.Fatalf("an 8 MiB request: %v", r["error"])
	}
	// Out: a response of just under 8 MiB.
	before := h.pieces
	id := nextID()
	h.sendJSON("tab", map[string]any{"v": 1, "type": "snug:db-request", "requestId": id, "instanceId": ins, "op": "exec",
		"sql": "SELECT substr(body, 1, ?) FROM blobs", "params": []any{frame.MaxDBFrameBytes - 200}})
	raw := tb.wait(t, apps.PieceFrame, func(b []byte) bool { return strings.Contains(string(b[:min(len(b), 300)]), id) })
	if len(raw) < frame.MaxDBFrameBytes-200 || len(raw) > frame.MaxDBFrameBytes || h.pieces-before < 20 {
		t.Fatalf("an 8 MiB answer: %d bytes in %d pieces", len(raw), h.pieces-before)
	}
	// One byte over the class: refused, with the recovered requestId.
	h.send("tab", dbFrame(t, "over", ins, "INSERT INTO blobs (body) VALUES (?)", frame.MaxDBFrameBytes+1))
	if r := tb.frameOf(t, "snug:db-response", "over"); errCode(r) != "HOST_ERROR" {
		t.Fatalf("8 MiB + 1: %v", r)
	}
	// Past the relay bound: discarded whole, no answer; the next request
	// is served.
	h.send("tab", dbFrame(t, "huge", ins, "INSERT INTO blobs (body) VALUES (?)", apps.MaxRelayBytes+1))
	if r := exec("SELECT count(*) FROM blobs"); r["ok"] != true || fmt.Sprint(r["rows"]) != "[[1]]" {
		t.Fatalf("after a discarded message: %v", r)
	}
	for _, f := range tb.frames() {
		if f["requestId"] == "huge" {
			t.Fatalf("the discarded message was answered: %v", errCode(f))
		}
	}
}

// TestNinthRequestInFlight: eight db requests wait on the app's storage;
// the ninth is refused at once, retryable, and the eight are all answered.
func TestNinthRequestInFlight(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	s := install(t, c, notes, nil)
	h := e.dialRunnerHost()
	tb := h.attach("tab", s.App.ID)
	ins := h.ready(tb)
	// The first request holds the app's storage for a while (one runtime
	// per app at a time), so all nine are in flight together; the rest are
	// quick, so the eight finish well within their deadline even on a
	// loaded machine.
	slow := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000) SELECT count(*) FROM c"
	for i := range 9 {
		sql := "SELECT 1"
		if i == 0 {
			sql = slow
		}
		h.sendJSON("tab", map[string]any{"v": 1, "type": "snug:db-request", "requestId": fmt.Sprintf("n%d", i), "instanceId": ins, "op": "exec", "sql": sql})
	}
	refused := 0
	for i := range 9 {
		r := tb.frameOf(t, "snug:db-response", fmt.Sprintf("n%d", i))
		if r["ok"] != true {
			if errCode(r) != "HOST_ERROR" || r["error"].(map[string]any)["retryable"] != true {
				t.Fatalf("n%d: %v", i, r)
			}
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("%d of nine refused, want exactly the ninth", refused)
	}
}

// TestMalformedAndForged: a malformed request with a recoverable id is
// answered MALFORMED, without one it is silence; a forged instanceId gets
// nothing; non-Snug messages are ignored.
func TestMalformedAndForged(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	s := install(t, c, notes, nil)
	h := e.dialRunnerHost()
	tb := h.attach("tab", s.App.ID)
	ins := h.ready(tb)
	h.send("tab", []byte(`{"v":1,"type":"snug:db-request","requestId":"m1","instanceId":"`+ins+`","op":"drop"}`))
	if r := tb.frameOf(t, "snug:db-response", "m1"); errCode(r) != "MALFORMED" {
		t.Fatalf("malformed: %v", r)
	}
	h.send("tab", []byte(`{"v":2,"type":"snug:app-message","requestId":"m2"}`))
	if r := tb.frameOf(t, "snug:app-response", "m2"); errCode(r) != "UNSUPPORTED_VERSION" {
		t.Fatalf("v2: %v", r)
	}
	for _, junk := range []string{`{not json`, `"a string"`, `{"type":"other"}`, `{"v":1,"type":"snug:db-request"}`,
		`{"v":1,"type":"snug:db-request","requestId":"f1","instanceId":"ins-forged","op":"kvGet","key":"k"}`} {
		h.send("tab", []byte(junk))
	}
	id := nextID()
	h.sendJSON("tab", map[string]any{"v": 1, "type": "snug:db-request", "requestId": id, "instanceId": ins, "op": "kvGet", "key": "k"})
	tb.frameOf(t, "snug:db-response", id)
	for _, f := range tb.frames() {
		if f["requestId"] == "f1" {
			t.Fatalf("a forged instanceId was answered: %v", f)
		}
	}
}

// TestRunnerLimit: a provider may show apps.MaxRunners apps at once; the
// next attach is QUEUE_FULL until one closes. Host-ready offers exactly
// what is wired: streaming, storage, net and open-url; no auth.
func TestRunnerLimit(t *testing.T) {
	e := start(t, "")
	c := e.client(client.Options{})
	s := install(t, c, notes, nil)
	h := e.dialRunnerHost()
	for i := range apps.MaxRunners {
		h.attach(fmt.Sprintf("tab%d", i), s.App.ID)
	}
	ctx := t.Context()
	if _, err := h.conn.Call(ctx, apps.ProviderAttach, apps.AttachParams{Runner: "one-more", App: s.App.ID}); !errors.Is(err, wire.Err(wire.CodeQueueFull)) {
		t.Fatalf("attach past the limit: %v", err)
	}
	h.conn.Notify(apps.EventDetach, apps.RunnerParams{Runner: "tab0"})
	waitFor(t, func() bool {
		_, err := h.conn.Call(ctx, apps.ProviderAttach, apps.AttachParams{Runner: "one-more", App: s.App.ID})
		return err == nil
	}, "no room after a runner closed")
	for _, bad := range []apps.AttachParams{{Runner: "", App: s.App.ID}, {Runner: "has space", App: s.App.ID},
		{Runner: strings.Repeat("r", 65), App: s.App.ID}, {Runner: "ok", App: ""}} {
		if _, err := h.conn.Call(ctx, apps.ProviderAttach, bad); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
			t.Errorf("attach %+v: %v", bad, err)
		}
	}
	if _, err := h.conn.Call(ctx, apps.ProviderAttach, apps.AttachParams{Runner: "x", App: "Reading & notes"}); !errors.Is(err, wire.Err(wire.CodeStaleTarget)) {
		t.Errorf("attach by name (only ids): %v", err)
	}

	ready := h.tab("tab1").frameOf(t, "snug:host-ready", "")
	caps, _ := json.Marshal(ready["capabilities"])
	if string(caps) != `{"auth":false,"db":true,"net":true,"openUrl":true,"streaming":true}` || ready["theme"] != "light" {
		t.Fatalf("host-ready %v", ready)
	}
}

// TestStuckTabIsDropped: a tab that stops taking what its app asked for
// (deliveries do not complete) while the app keeps asking is dropped once
// its queue is past its bound; the tab is told why when it comes back.
func TestStuckTabIsDropped(t *testing.T) {
	defer hub.SetMaxQueuedChars(64 << 10)()
	e := start(t, "")
	c := e.client(client.Options{})
	s := install(t, c, notes, nil)
	h := e.dialRunnerHost()
	tb := h.attach("tab", s.App.ID)
	h.ready(tb)
	hold := make(chan struct{})
	h.mu.Lock()
	h.hold = hold
	h.mu.Unlock()
	// Malformed requests with their ids: each is answered at once.
	for i := range 1000 {
		h.send("tab", []byte(fmt.Sprintf(`{"v":1,"type":"snug:db-request","requestId":"m%d","op":"nope"}`, i)))
	}
	waitFor(t, func() bool {
		return strings.Contains(e.log.String(), "dropped a runner whose tab stopped taking its frames")
	},
		"the stuck runner was not dropped")
	close(hold)
	if reason := tb.wait(t, apps.PieceClosed, func([]byte) bool { return true }); !strings.Contains(string(reason), "more than its tab could take") {
		t.Fatalf("closed: %s", reason)
	}
	// The provider's other runners are unaffected.
	tb2 := h.attach("tab2", s.App.ID)
	h.ready(tb2)
}
