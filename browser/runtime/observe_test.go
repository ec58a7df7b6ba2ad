package runtime

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

func TestObserve(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	o := f.observe("s", l.ID)
	if o.Format != "full" || o.Cursor == "" || o.ResyncRequired || o.Tab != l.Tab || o.URL != pageURL || o.Title != "Form" ||
		o.DocumentEpoch != "F:L1" || o.Revision != 1 || o.Scope.Kind != "document" || o.Truncated {
		t.Fatalf("observation %+v", o)
	}
	if len(o.Nodes) != 3 || o.Nodes[0].Kind != "region" || !o.Nodes[1].Editable || o.Nodes[2].Name != "Greet" ||
		strings.Join(o.Text, "|") != "DSH demo" {
		t.Fatalf("projection %+v %q", o.Nodes, o.Text)
	}
	read := f.p.sent(browser.ProviderAXRead)[0].(*requestParams[axRequest])
	if read.Lease.ID != l.ID || read.Lease.Token != l.Token || read.Request != (axRequest{}) {
		t.Fatalf("ax.read sent %+v", read)
	}
	again := f.observe("s", l.ID)
	if again.Revision != 2 || refOf(t, again.Nodes, "button", "Greet") != refOf(t, o.Nodes, "button", "Greet") || again.Cursor == o.Cursor {
		t.Fatalf("refs must stay for the same element of the same document, cursors and revisions move: %+v", again)
	}
	f.p.page.edit(func(pg *fakePage) { pg.epoch, pg.truncated = "F:L2", true })
	moved := f.observe("s", l.ID)
	if refOf(t, moved.Nodes, "button", "Greet") == refOf(t, o.Nodes, "button", "Greet") || !moved.Truncated {
		t.Fatalf("a new document must mint new refs and carry truncated: %+v", moved)
	}

	t.Run("query", func(t *testing.T) {
		q := must[browser.Observation](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID,
			"query": map[string]any{"name": "Greet", "role": "button"}})
		if q.Scope.Kind != "query" || q.Scope.Query == nil || q.Scope.Query.Name != "Greet" || len(q.Nodes) != 1 || q.Nodes[0].Name != "Greet" {
			t.Fatalf("query observation %+v", q)
		}
		find := f.p.sent(browser.ProviderAXFind)
		if len(find) != 1 || find[0].(*requestParams[axRequest]).Request != (axRequest{Name: "Greet", Role: "button"}) {
			t.Fatalf("ax.find sent %+v", find)
		}
		// A query's match is an element whatever its role.
		q = must[browser.Observation](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"name": "DSH demo"}})
		if len(q.Nodes) != 1 || q.Nodes[0].Role != "StaticText" || len(q.Text) != 0 {
			t.Fatalf("query for text %+v", q)
		}
	})

	t.Run("off its origin", func(t *testing.T) {
		g := newFixture(t, Config{})
		l := g.claim("s")
		g.p.page.edit(func(pg *fakePage) { pg.url = "https://elsewhere.test/" })
		if _, err := invoke[any](t, g.r.Observe, g.c, map[string]any{"sessionId": "s", "leaseId": l.ID}); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
			t.Fatalf("a page of another origin: %v, want LEASE_REVOKED", err)
		}
		if ids := g.c.revocations(t); len(ids) != 1 || ids[0] != l.ID {
			t.Fatalf("the owner was not told: %v", ids)
		}
		if _, err := invoke[any](t, g.r.ValidateLease, g.c, map[string]any{"sessionId": "s", "leaseId": l.ID}); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
			t.Fatalf("the origin-scoped lease outlived the origin: %v", err)
		}
	})

	t.Run("personal leases follow the tab", func(t *testing.T) {
		g := newFixture(t, Config{Personal: true})
		l := g.claim("s")
		g.p.page.edit(func(pg *fakePage) { pg.url = "https://elsewhere.test/" })
		if o := g.observe("s", l.ID); o.URL != "https://elsewhere.test/" {
			t.Fatalf("observation %+v", o)
		}
		g.p.page.edit(func(pg *fakePage) { pg.url = "chrome://settings" })
		if _, err := invoke[any](t, g.r.Observe, g.c, map[string]any{"sessionId": "s", "leaseId": l.ID}); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
			t.Fatalf("a tab that left HTTP(S): %v, want LEASE_REVOKED", err)
		}
	})
}

func TestObserveCursor(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	for i := range 30 { // enough page that one changed line is a small delta
		f.p.page.edit(func(pg *fakePage) {
			pg.add("b"+string(rune('a'+i)), "2", axNode{BackendNodeID: int64(100 + i), Role: "button", Name: "Button " + string(rune('A'+i))})
		})
	}
	base := f.observe("s", l.ID)
	withCursor := func(cursor string, extra map[string]any) json.RawMessage {
		t.Helper()
		params := map[string]any{"sessionId": "s", "leaseId": l.ID, "cursor": cursor}
		for k, v := range extra {
			params[k] = v
		}
		return must[json.RawMessage](t, f.r.Observe, f.c, params)
	}

	f.p.page.say("Hello, Ada!")
	var d browser.ObservationDelta
	json.Unmarshal(withCursor(base.Cursor, nil), &d)
	if d.Format != "delta" || d.BaseCursor != base.Cursor || d.Cursor == base.Cursor || d.ResyncRequired || len(d.Nodes.Upsert) != 0 ||
		d.Text == nil || strings.Join(d.Text.Insert, "|") != "Hello, Ada!" {
		t.Fatalf("delta %+v", d)
	}
	nodes, text := d.Apply(base.Nodes, base.Text)
	if now := f.observe("s", l.ID); len(nodes) != len(now.Nodes) || strings.Join(text, "|") != strings.Join(now.Text, "|") {
		t.Fatalf("the delta does not give the page: %v %q", nodes, text)
	}
	// The delta's cursor is a baseline too.
	var next browser.ObservationDelta
	json.Unmarshal(withCursor(d.Cursor, nil), &next)
	if next.Format != "delta" || next.BaseCursor != d.Cursor || next.Text != nil {
		t.Fatalf("delta against a delta's cursor %+v", next)
	}

	resync := func(name, cursor string, c *fakeClient, extra map[string]any, reason string) {
		t.Helper()
		params := map[string]any{"sessionId": "s", "leaseId": l.ID, "cursor": cursor}
		for k, v := range extra {
			params[k] = v
		}
		o, err := invoke[browser.Observation](t, f.r.Observe, c, params)
		if err != nil || o.Format != "full" || !o.ResyncRequired || o.ResyncReason != reason {
			t.Errorf("%s: %+v %v, want a full observation with %s", name, o, err, reason)
		}
	}
	resync("an unknown cursor", "c-unknown", f.c, nil, "cursor-unavailable")
	resync("a changed scope", base.Cursor, f.c, map[string]any{"query": map[string]any{"name": "Greet"}}, "scope-changed")
	f.clock.advance(CursorRetention + 1)
	resync("an expired cursor", d.Cursor, f.c, nil, "cursor-unavailable")
	fresh := f.observe("s", l.ID)
	f.p.page.edit(func(pg *fakePage) { pg.epoch = "F:L2" })
	resync("a new document", fresh.Cursor, f.c, nil, "document-changed")

	// Another owner's cursor is unknown to this one (its lease is not theirs
	// either, so ask through a lease of its own).
	other := newFakeClient(2)
	f.h.connect(other)
	f.p.on(browser.ProviderTabsList, func(any) (any, error) {
		return []browser.TabSummary{{ID: "inst:2", InstanceID: "inst", URL: pageURL}}, nil
	})
	theirs := must[browser.LeaseResult](t, f.r.Claim, other, map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:2"})
	mine := f.observe("s", l.ID)
	o, err := invoke[browser.Observation](t, f.r.Observe, other, map[string]any{"sessionId": "s", "leaseId": theirs.ID, "cursor": mine.Cursor})
	if err != nil || !o.ResyncRequired || o.ResyncReason != "cursor-unavailable" {
		t.Errorf("another owner's cursor: %+v %v", o, err)
	}
}

// frameFixture leases the standard page with a same-origin child frame
// and returns its inventory (the main frame, then the child).
func frameFixture(t *testing.T, caps ...string) (*fixture, browser.LeaseResult, []browser.Frame) {
	f := newFixture(t, Config{}, caps...)
	f.p.page.withChildFrame()
	l := f.claim("s")
	if !f.p.caps[browser.CapFramesList] {
		return f, l, nil
	}
	inv := must[browser.FrameInventory](t, f.r.Frames, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID})
	if len(inv.Frames) != 2 {
		t.Fatalf("frames %+v", inv)
	}
	return f, l, inv.Frames
}

// selector names a listed frame and its document.
func selector(fr browser.Frame) map[string]any {
	return map[string]any{"frameId": fr.ID, "documentEpoch": fr.DocumentEpoch}
}

func TestObserveFrame(t *testing.T) {
	t.Parallel()
	f, l, frames := frameFixture(t)
	frame := selector(frames[1])
	o := must[browser.Observation](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID, "frame": frame})
	if o.Scope.Kind != "frame" || o.Scope.FrameID != frames[1].ID || o.DocumentEpoch != "C:LC1" || len(o.Nodes) != 1 ||
		o.Nodes[0].Name != "Inner" || strings.Join(o.Text, "") != "Inside" {
		t.Fatalf("frame observation %+v", o)
	}
	read := f.p.sent(browser.ProviderAXRead)
	if sent := read[len(read)-1].(*requestParams[axRequest]).Request.Frame; sent == nil || *sent != (frameDocument{"C", "LC1"}) {
		t.Fatalf("ax.read sent frame %+v", sent)
	}
	q := must[browser.Observation](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID, "frame": frame,
		"query": map[string]any{"name": "Inner"}})
	if q.Scope.Kind != "query" || q.Scope.FrameID != frames[1].ID || len(q.Nodes) != 1 {
		t.Fatalf("frame query %+v", q)
	}
	// The main document's epoch stays.
	if main := f.observe("s", l.ID); main.DocumentEpoch != "F:L1" {
		t.Fatalf("main observation after a frame read: %+v", main)
	}

	for _, tc := range []struct {
		name   string
		sel    func(main, child browser.Frame) map[string]any
		script func(p *fakeProvider)
		want   wire.Code
		read   bool // the provider is asked to read, and refuses
	}{
		{"the main frame", func(m, _ browser.Frame) map[string]any { return selector(m) }, nil, wire.CodeInvalidRequest, false},
		{"an unknown frame", func(_, c browser.Frame) map[string]any {
			return map[string]any{"frameId": "frame-0", "documentEpoch": c.DocumentEpoch}
		}, nil, wire.CodeStaleTarget, false},
		{"another document in the frame", func(_, c browser.Frame) map[string]any {
			return map[string]any{"frameId": c.ID, "documentEpoch": "C:LC0"}
		}, nil, wire.CodeStaleTarget, false},
		{"a cross-origin frame", nil, func(p *fakeProvider) {
			p.page.edit(func(pg *fakePage) { pg.frames[0].Origin = "https://ads.test" })
		}, wire.CodePolicyDenied, false},
		{"an out-of-process frame", nil, func(p *fakeProvider) {
			p.page.edit(func(pg *fakePage) { pg.frames[0] = sourceFrame{FrameID: "C", ParentID: "F"} })
		}, wire.CodePolicyDenied, false},
		{"the frame navigated before the read", nil, func(p *fakeProvider) {
			p.page.edit(func(pg *fakePage) { pg.docs["C"].epoch = "C:LC2" })
		}, wire.CodeStaleTarget, true},
		{"a read of another document", nil, func(p *fakeProvider) {
			p.on(browser.ProviderAXRead, func(any) (any, error) { return &axRead{DocumentEpoch: "C:LC2", URL: "https://app.test/inner"}, nil })
		}, wire.CodeStaleTarget, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, l, frames := frameFixture(t)
			sel := selector(frames[1])
			if tc.sel != nil {
				sel = tc.sel(frames[0], frames[1])
			}
			if tc.script != nil {
				tc.script(g.p)
			}
			if _, err := invoke[any](t, g.r.Observe, g.c, map[string]any{"sessionId": "s", "leaseId": l.ID, "frame": sel}); rpc.CodeOf(err) != tc.want {
				t.Fatalf("%v, want %s", err, tc.want)
			}
			if read := g.p.count(browser.ProviderAXRead) > 0; read != tc.read {
				t.Fatalf("the provider was asked to read: %v", read)
			}
		})
	}
}

func TestFrames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	params := map[string]any{"sessionId": "s", "leaseId": l.ID}
	f.p.page.edit(func(pg *fakePage) {
		pg.frames = []sourceFrame{
			{FrameID: "A", ParentID: "F", LoaderID: "LA", Origin: "https://app.test", Local: true},
			{FrameID: "B", ParentID: "A", LoaderID: "LB", Origin: "https://ads.test", Local: true},
			{FrameID: "O", ParentID: "F"}, // out of process
		}
	})
	inv := must[browser.FrameInventory](t, f.r.Frames, f.c, params)
	if inv.Tab != l.Tab || inv.DocumentEpoch != "F:L1" || len(inv.Frames) != 4 || !inv.Frames[0].IsMain ||
		inv.Frames[1].OriginRelation != originSame || inv.Frames[2].OriginRelation != originCross || inv.Frames[3].ContextStatus != contextUnknown ||
		inv.Frames[2].ParentID != inv.Frames[1].ID || inv.Frames[1].DocumentEpoch != "A:LA" {
		t.Fatalf("inventory %+v", inv)
	}
	if again := must[browser.FrameInventory](t, f.r.Frames, f.c, params); again.Frames[1].ID != inv.Frames[1].ID {
		t.Fatal("a frame's ID changed while the lease lasts")
	}
	// An inconsistent list breaks the contract.
	f.p.page.edit(func(pg *fakePage) {
		pg.frames = []sourceFrame{{FrameID: "B", ParentID: "A", LoaderID: "LB", Local: true}}
	})
	if _, err := invoke[any](t, f.r.Frames, f.c, params); !errors.Is(err, errProvider) {
		t.Fatalf("a child before its parent: %v, want errProvider", err)
	}
	f.p.fail(browser.ProviderFramesList, wire.CodeLeaseRevoked)
	if _, err := invoke[any](t, f.r.Frames, f.c, params); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("a provider error: %v", err)
	}
	f.p.on(browser.ProviderFramesList, func(any) (any, error) {
		list := f.p.page.frameList()
		list.URL, list.Frames = "https://elsewhere.test/", list.Frames[:1]
		return list, nil
	})
	if _, err := invoke[any](t, f.r.Frames, f.c, params); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("a tab off its origin: %v, want LEASE_REVOKED", err)
	}
}

func TestCapture(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	params := map[string]any{"sessionId": "s", "leaseId": l.ID}
	shot := func(edit func(s *sourceScreenshot)) func(any) (any, error) {
		return func(any) (any, error) {
			s := sourceScreenshot{DocumentEpoch: "F:L1", URL: pageURL, CapturedAt: 1700000000000, MimeType: jpegMime, Data: jpegOf(30),
				Viewport: browser.Viewport{Width: 800, Height: 600, PageY: 40}, Redaction: browser.Redaction{Policy: redactionPolicy, Frames: 2, Regions: 1}}
			if edit != nil {
				edit(&s)
			}
			return s, nil
		}
	}
	for _, tc := range []struct {
		name   string
		answer func(any) (any, error)
		want   wire.Code // "" succeeds; INTERNAL_ERROR is a broken contract
	}{
		{"a coherent screenshot", shot(nil), ""},
		{"data at the cap", shot(func(s *sourceScreenshot) { s.Data = jpegOf(browser.MaxScreenshotData / 4 * 3) }), ""},
		{"data one character past the cap", shot(func(s *sourceScreenshot) { s.Data = jpegOf(browser.MaxScreenshotData/4*3) + "A" }), wire.CodeQueueFull},
		{"not a JPEG", shot(func(s *sourceScreenshot) { s.Data = base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n")) }), wire.CodeInternalError},
		{"not base64", shot(func(s *sourceScreenshot) { s.Data = "/9j/!!" }), wire.CodeInternalError},
		{"another type", shot(func(s *sourceScreenshot) { s.MimeType = "image/png" }), wire.CodeInternalError},
		{"more regions than frames", shot(func(s *sourceScreenshot) { s.Redaction.Regions = 3 }), wire.CodeInternalError},
		{"another policy", shot(func(s *sourceScreenshot) { s.Redaction.Policy = "none" }), wire.CodeInternalError},
		{"an empty viewport", shot(func(s *sourceScreenshot) { s.Viewport.Width = 0 }), wire.CodeInternalError},
		{"no document", shot(func(s *sourceScreenshot) { s.DocumentEpoch = "" }), wire.CodeInternalError},
		{"no time", shot(func(s *sourceScreenshot) { s.CapturedAt = 0 }), wire.CodeInternalError},
		{"not an object", func(any) (any, error) { return json.RawMessage(`"jpeg"`), nil }, wire.CodeInternalError},
		{"the page kept changing", func(any) (any, error) { return nil, wire.Err(wire.CodeStaleTarget) }, wire.CodeStaleTarget},
		{"the tab is not shown", func(any) (any, error) { return nil, wire.Err(wire.CodeNotActionable) }, wire.CodeNotActionable},
	} {
		f.p.on(browser.ProviderCapture, tc.answer)
		got, err := invoke[browser.Screenshot](t, f.r.Capture, f.c, params)
		switch {
		case tc.want == wire.CodeInternalError:
			if !errors.Is(err, errProvider) {
				t.Errorf("%s: %v, want errProvider", tc.name, err)
			}
		case tc.want != "":
			if rpc.CodeOf(err) != tc.want {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case got.Tab != l.Tab || got.DocumentEpoch != "F:L1" || got.Viewport.PageY != 40 || got.Redaction.Frames != 2 || got.MimeType != jpegMime:
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
	f.p.on(browser.ProviderCapture, shot(nil))
	raw := must[json.RawMessage](t, f.r.Capture, f.c, params)
	if strings.Contains(string(raw), pageURL) {
		t.Fatalf("the screenshot carries the provider's url: %.200s", raw)
	}
	if sent := f.p.sent(browser.ProviderCapture)[0].(*leaseParams); sent.Lease.ID != l.ID || sent.Lease.Token != l.Token {
		t.Fatalf("capture sent %+v", sent.Lease)
	}
	must[map[string]bool](t, f.r.ValidateLease, f.c, params)

	f.p.on(browser.ProviderCapture, shot(func(s *sourceScreenshot) { s.URL = "https://elsewhere.test/" }))
	if _, err := invoke[any](t, f.r.Capture, f.c, params); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("a screenshot of another origin: %v, want LEASE_REVOKED", err)
	}
	if _, err := invoke[any](t, f.r.ValidateLease, f.c, params); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("validateLease after the origin changed: %v", err)
	}
}

func TestValidateLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	params := map[string]any{"sessionId": "s", "leaseId": l.ID}
	if got := must[map[string]bool](t, f.r.ValidateLease, f.c, params); len(got) != 1 || !got["valid"] {
		t.Fatalf("validateLease %v", got)
	}
	other := newFakeClient(2)
	for name, call := range map[string]func() error{
		"another session": func() error {
			_, err := invoke[any](t, f.r.ValidateLease, f.c, map[string]any{"sessionId": "x", "leaseId": l.ID})
			return err
		},
		"another connection": func() error { _, err := invoke[any](t, f.r.ValidateLease, other, params); return err },
		"an unknown lease": func() error {
			_, err := invoke[any](t, f.r.ValidateLease, f.c, map[string]any{"sessionId": "s", "leaseId": "nope"})
			return err
		},
	} {
		if err := call(); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
			t.Errorf("%s: %v, want LEASE_REVOKED", name, err)
		}
	}
	// A browser gone (before the broker ends its leases): not valid either.
	f.h.remove(f.p)
	if _, err := invoke[any](t, f.r.ValidateLease, f.c, params); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("a lease on a gone browser: %v, want LEASE_REVOKED", err)
	}
	if len(f.p.methods()) != 2 { // tabs.list and lease.grant of the claim
		t.Fatalf("validateLease asked the provider: %v", f.p.methods())
	}
}

// TestObserveFrameOwners: the count of the main document's frame owners
// that a whole read brings goes to a client that lists
// broker.observe-frame-owners.v1, on a whole-document observation only; a
// reference client's observation is as before.
func TestObserveFrameOwners(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	owners := 2
	f.p.on(browser.ProviderAXRead, func(params any) (any, error) {
		read := f.p.page.read(func(axNode) bool { return true })
		if params.(*requestParams[axRequest]).Request.Frame == nil {
			read.FrameOwners = &owners
		}
		return read, nil
	})
	whole := map[string]any{"sessionId": "s", "leaseId": l.ID}
	if o := must[map[string]any](t, f.r.Observe, f.c, whole); o["frameOwners"] != nil {
		t.Fatalf("a client without %s got frameOwners: %v", browser.CapObserveFrameOwners, o["frameOwners"])
	}
	f.c.caps = []string{browser.CapObserveFrameOwners}
	if o := f.observe("s", l.ID); o.FrameOwners == nil || *o.FrameOwners != 2 {
		t.Fatalf("frameOwners %v, want 2", o.FrameOwners)
	}
	owners = 0
	if o := f.observe("s", l.ID); o.FrameOwners == nil || *o.FrameOwners != 0 {
		t.Fatalf("frameOwners %v, want 0: no frame to list", o.FrameOwners)
	}
	q := must[browser.Observation](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"name": "Greet"}})
	if q.FrameOwners != nil {
		t.Fatalf("a query observation carries frameOwners %v", *q.FrameOwners)
	}
	// An action's observation is no full observation of the page: none.
	o := f.observe("s", l.ID)
	res := f.act("s", map[string]any{"requestId": "r1", "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
		"action": map[string]any{"kind": "click", "ref": refOf(t, o.Nodes, "button", "Greet")}})
	if res.Observation == nil || res.Observation.FrameOwners != nil {
		t.Fatalf("an action's observation %+v", res.Observation)
	}
	// A provider that cannot tell says nothing, and neither does the broker.
	f.p.on(browser.ProviderAXRead, func(any) (any, error) { return f.p.page.read(func(axNode) bool { return true }), nil })
	if o := f.observe("s", l.ID); o.FrameOwners != nil {
		t.Fatalf("frameOwners %v from a provider that did not tell", *o.FrameOwners)
	}
}

// TestObserveFrames: a client that lists broker.observe-frames.v1 gets
// the page's child frames in a whole-document observation: every listed
// frame, and the same-origin ones read (at most MaxInlineFrames), under
// the authority of one frame list; a read refused in the frame gives its
// code and leaves the others read. Any other observation has none.
func TestObserveFrames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	f.p.page.withChildFrame()
	f.p.page.edit(func(pg *fakePage) {
		pg.frames = append(pg.frames,
			sourceFrame{FrameID: "X", ParentID: "F", LoaderID: "LX", Origin: "https://ads.test", Local: true},
			sourceFrame{FrameID: "O", ParentID: "F"}) // out of process
		for i := 1; i <= browser.MaxInlineFrames; i++ {
			id := fmt.Sprintf("S%d", i)
			doc := &fakePage{epoch: id + ":L" + id, url: "https://app.test/s", title: id, docs: map[string]*fakePage{}}
			doc.add("1", "", axNode{BackendNodeID: 1, Role: "RootWebArea", Name: id})
			doc.add("2", "1", axNode{BackendNodeID: int64(60 + i), Role: "button", Name: "Button " + id})
			pg.docs[id] = doc
			pg.frames = append(pg.frames, sourceFrame{FrameID: id, ParentID: "F", LoaderID: "L" + id, Origin: "https://app.test", Local: true})
		}
	})
	whole := map[string]any{"sessionId": "s", "leaseId": l.ID}

	// Without the capability: no frames, and none listed.
	if o := f.observe("s", l.ID); o.Frames != nil || f.p.count(browser.ProviderFramesList) != 0 {
		t.Fatalf("a client without %s: frames %+v, %d lists", browser.CapObserveFrames, o.Frames, f.p.count(browser.ProviderFramesList))
	}

	f.c.caps = []string{browser.CapObserveFrames}
	reads := f.p.count(browser.ProviderAXRead)
	o := f.observe("s", l.ID)
	if lists := f.p.count(browser.ProviderFramesList); lists != 1 {
		t.Fatalf("%d frame lists for one observation, want 1", lists)
	}
	if n := f.p.count(browser.ProviderAXRead) - reads; n != 1+browser.MaxInlineFrames {
		t.Fatalf("%d reads, want the page and %d frames", n, browser.MaxInlineFrames)
	}
	if len(o.Frames) != 3+browser.MaxInlineFrames {
		t.Fatalf("frames %+v", o.Frames)
	}
	byEpoch := map[string]browser.InlineFrame{}
	for _, fr := range o.Frames {
		byEpoch[fr.DocumentEpoch] = fr
		if fr.IsMain || fr.ParentID != "" && fr.ParentID == fr.ID {
			t.Fatalf("frame %+v", fr)
		}
	}
	c := byEpoch["C:LC1"]
	if c.Observation == nil || c.Code != "" || c.Observation.Scope.FrameID != c.ID || c.Observation.Nodes[0].Name != "Inner" {
		t.Fatalf("the same-origin frame: %+v", c)
	}
	if x := byEpoch["X:LX"]; x.OriginRelation != originCross || x.Observation != nil || x.Code != "" {
		t.Fatalf("the cross-origin frame: %+v", x)
	}
	if op := byEpoch[""]; op.ContextStatus != contextUnknown || op.Observation != nil {
		t.Fatalf("the out-of-process frame: %+v", op)
	}
	read := 0
	for i := 1; i <= browser.MaxInlineFrames; i++ {
		if byEpoch[fmt.Sprintf("S%d:LS%d", i, i)].Observation != nil {
			read++
		}
	}
	if last := byEpoch[fmt.Sprintf("S%d:LS%d", browser.MaxInlineFrames, browser.MaxInlineFrames)]; read != browser.MaxInlineFrames-1 || last.Observation != nil || last.Code != "" {
		t.Fatalf("%d of the other same-origin frames read, the last %+v: want all but the one past %d", read, last, browser.MaxInlineFrames)
	}

	// A frame's observation is a baseline of its own: a cursor for that frame.
	again := must[browser.Observation](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID,
		"frame": map[string]any{"frameId": c.ID, "documentEpoch": c.DocumentEpoch}, "cursor": c.Observation.Cursor})
	if again.ResyncRequired {
		t.Fatalf("the frame's cursor: %+v", again)
	}

	// A frame whose document changed between the list and its read is
	// refused, and the others are read.
	f.p.on(browser.ProviderFramesList, func(any) (any, error) {
		list := f.p.page.frameList()
		f.p.page.edit(func(pg *fakePage) { pg.docs["C"].epoch = "C:LC2" })
		return list, nil
	})
	o = f.observe("s", l.ID)
	for _, fr := range o.Frames {
		switch {
		case fr.DocumentEpoch == "C:LC1" && (fr.Code != string(wire.CodeStaleTarget) || fr.Observation != nil):
			t.Fatalf("a frame that navigated: %+v", fr)
		case fr.DocumentEpoch == "S1:LS1" && fr.Observation == nil:
			t.Fatalf("a frame beside it was not read: %+v", fr)
		}
	}

	// A list of another document (the page navigated after its read)
	// gives no frames: none are read.
	f.p.on(browser.ProviderFramesList, func(any) (any, error) {
		list := f.p.page.frameList()
		list.DocumentEpoch, list.Frames[0].LoaderID = "F:L9", "L9"
		return list, nil
	})
	reads = f.p.count(browser.ProviderAXRead)
	if o := f.observe("s", l.ID); o.Frames != nil || f.p.count(browser.ProviderAXRead)-reads != 1 {
		t.Fatalf("frames of another document: %+v", o.Frames)
	}

	// A query, a cursor or a page without frame owners: no frames listed.
	lists := f.p.count(browser.ProviderFramesList)
	must[browser.Observation](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"name": "Inner"}})
	must[map[string]any](t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID, "cursor": o.Cursor})
	none := 0
	f.p.on(browser.ProviderAXRead, func(params any) (any, error) {
		read := f.p.page.read(func(axNode) bool { return true })
		read.FrameOwners = &none
		return read, nil
	})
	if o := must[browser.Observation](t, f.r.Observe, f.c, whole); o.Frames != nil {
		t.Fatalf("a page without frame owners: %+v", o.Frames)
	}
	if n := f.p.count(browser.ProviderFramesList); n != lists {
		t.Fatalf("%d frame lists for observations that carry no frames", n-lists)
	}
}
