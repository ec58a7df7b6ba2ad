package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// with returns a deep copy of params with the value at a dotted path set
// (nil deletes it).
func with(params map[string]any, path string, v any) map[string]any {
	var out map[string]any
	data, _ := json.Marshal(params)
	json.Unmarshal(data, &out)
	m := out
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		m = m[k].(map[string]any)
	}
	if v == nil {
		delete(m, keys[len(keys)-1])
	} else {
		m[keys[len(keys)-1]] = v
	}
	return out
}

// units returns a string of n UTF-16 units: astral characters (two units
// each) when n is even, to check bounds count units, not bytes or runes.
func units(n int) string {
	if n%2 == 0 {
		return strings.Repeat("😀", n/2)
	}
	return strings.Repeat("x", n)
}

// TestParamBounds: every bound of every method's params, at its limit
// (accepted) and just past it (INVALID_REQUEST, with nothing sent to the
// provider); unknown fields and malformed JSON are INVALID_REQUEST too.
func TestParamBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	f.p.page.withChildFrame()
	l := f.claim("s")
	o := f.observe("s", l.ID)
	greet := refOf(t, o.Nodes, "button", "Greet")
	box := refOf(t, o.Nodes, "textbox", "Your name")
	leaseOnly := map[string]any{"sessionId": "s", "leaseId": l.ID}
	frame := map[string]any{"frameId": "f", "documentEpoch": "C:LC1"}
	act := map[string]any{"sessionId": "s", "request": map[string]any{"requestId": "r", "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
		"timeoutMs": 50, "action": map[string]any{"kind": "fill", "ref": box, "text": "Ada"}}} // an expectation never met waits 50 ms
	batch := map[string]any{"sessionId": "s", "approvalId": "ap", "request": map[string]any{"requestId": "r", "leaseId": l.ID,
		"documentEpoch": o.DocumentEpoch, "steps": []any{map[string]any{"action": map[string]any{"kind": "press", "ref": greet, "key": "Enter"}}}}}
	steps := func(n int) []any {
		var out []any
		for range n {
			out = append(out, map[string]any{"action": map[string]any{"kind": "press", "ref": greet, "key": "Enter"}})
		}
		return out
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }

	type tc struct {
		name   string
		m      method
		params any
		ok     bool // within the bounds: anything but INVALID_REQUEST
	}
	cases := []tc{
		{"instances: empty", f.r.Instances, map[string]any{}, true},
		{"instances: sessionId 256", f.r.Instances, map[string]any{"sessionId": units(256)}, true},
		{"instances: sessionId 257", f.r.Instances, map[string]any{"sessionId": units(257)}, false},
		{"instances: unknown field", f.r.Instances, map[string]any{"x": 1}, false},
		{"instances: not an object", f.r.Instances, raw(`[]`), false},
		{"instances: trailing data", f.r.Instances, raw(`{}{}`), false},

		{"tabs: sessionId 256 units", f.r.Tabs, map[string]any{"sessionId": units(256), "instanceId": "inst"}, true},
		{"tabs: sessionId 258 units", f.r.Tabs, map[string]any{"sessionId": units(258), "instanceId": "inst"}, false},
		{"tabs: no sessionId", f.r.Tabs, map[string]any{"instanceId": "inst"}, false},
		{"tabs: instanceId 257", f.r.Tabs, map[string]any{"sessionId": "s", "instanceId": units(257)}, false},
		{"tabs: unknown field", f.r.Tabs, map[string]any{"sessionId": "s", "instanceId": "inst", "all": true}, false},

		{"claim: tab 256", f.r.Claim, map[string]any{"sessionId": "s", "instanceId": "inst", "tab": units(256)}, true},
		{"claim: tab 257", f.r.Claim, map[string]any{"sessionId": "s", "instanceId": "inst", "tab": units(257)}, false},
		{"claim: no tab", f.r.Claim, map[string]any{"sessionId": "s", "instanceId": "inst"}, false},
		{"claim: instanceId 257", f.r.Claim, map[string]any{"sessionId": "s", "instanceId": units(257), "tab": "inst:1"}, false},
		{"claim: sessionId 257", f.r.Claim, map[string]any{"sessionId": units(257), "instanceId": "inst", "tab": "inst:1"}, false},
		{"claim: unknown field", f.r.Claim, map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:1", "scope": "tab"}, false},

		{"observe: cursor 128", f.r.Observe, with(leaseOnly, "cursor", units(128)), true},
		{"observe: cursor 129", f.r.Observe, with(leaseOnly, "cursor", units(129)), false},
		{"observe: leaseId 257", f.r.Observe, with(leaseOnly, "leaseId", units(257)), false},
		{"observe: query name 1000", f.r.Observe, with(leaseOnly, "query", map[string]any{"name": units(1000)}), true},
		{"observe: query name 1001", f.r.Observe, with(leaseOnly, "query", map[string]any{"name": units(1001)}), false},
		{"observe: blank query name", f.r.Observe, with(leaseOnly, "query", map[string]any{"name": " \t"}), false},
		{"observe: empty query name", f.r.Observe, with(leaseOnly, "query", map[string]any{"name": ""}), false},
		{"observe: query role 80", f.r.Observe, with(leaseOnly, "query", map[string]any{"name": "Go", "role": strings.Repeat("a", 80)}), true},
		{"observe: query role 81", f.r.Observe, with(leaseOnly, "query", map[string]any{"name": "Go", "role": strings.Repeat("a", 81)}), false},
		{"observe: query role not a word", f.r.Observe, with(leaseOnly, "query", map[string]any{"name": "Go", "role": "menu-item"}), false},
		{"observe: query unknown field", f.r.Observe, with(leaseOnly, "query", map[string]any{"name": "Go", "exact": true}), false},
		{"observe: frameId 128", f.r.Observe, with(leaseOnly, "frame", with(frame, "frameId", units(128))), true},
		{"observe: frameId 129", f.r.Observe, with(leaseOnly, "frame", with(frame, "frameId", units(129))), false},
		{"observe: frame documentEpoch 512", f.r.Observe, with(leaseOnly, "frame", with(frame, "documentEpoch", units(512))), true},
		{"observe: frame documentEpoch 513", f.r.Observe, with(leaseOnly, "frame", with(frame, "documentEpoch", units(513))), false},
		{"observe: frame without documentEpoch", f.r.Observe, with(leaseOnly, "frame", map[string]any{"frameId": "f"}), false},

		{"readPage: continuation 128", f.r.ReadPage, with(leaseOnly, "options", map[string]any{"continuation": units(128)}), true},
		{"readPage: continuation 129", f.r.ReadPage, with(leaseOnly, "options", map[string]any{"continuation": units(129)}), false},
		{"readPage: rootRef 128", f.r.ReadPage, with(leaseOnly, "options", map[string]any{"rootRef": units(128)}), true},
		{"readPage: rootRef 129", f.r.ReadPage, with(leaseOnly, "options", map[string]any{"rootRef": units(129)}), false},
		{"readPage: frameId 129", f.r.ReadPage, with(leaseOnly, "options", map[string]any{"frame": with(frame, "frameId", units(129))}), false},
		{"readPage: frame documentEpoch 513", f.r.ReadPage, with(leaseOnly, "options", map[string]any{"frame": with(frame, "documentEpoch", units(513))}), false},
		{"readPage: options not an object", f.r.ReadPage, with(leaseOnly, "options", "document"), false},
		{"readPage: unknown option", f.r.ReadPage, with(leaseOnly, "options", map[string]any{"maxNodes": 10}), false},
		{"readPage: sessionId 257", f.r.ReadPage, with(leaseOnly, "sessionId", units(257)), false},
	}
	for _, m := range []struct {
		name string
		m    method
	}{{"frames", f.r.Frames}, {"capture", f.r.Capture}, {"validateLease", f.r.ValidateLease}, {"release", f.r.Release}} {
		cases = append(cases,
			tc{m.name + ": leaseId 256", m.m, with(leaseOnly, "leaseId", units(256)), true},
			tc{m.name + ": leaseId 257", m.m, with(leaseOnly, "leaseId", units(257)), false},
			tc{m.name + ": no leaseId", m.m, with(leaseOnly, "leaseId", nil), false},
			tc{m.name + ": sessionId 257", m.m, with(leaseOnly, "sessionId", units(257)), false},
			tc{m.name + ": unknown field", m.m, with(leaseOnly, "x", 1), false},
		)
	}
	cases = append(cases, []tc{
		{"releaseSession: sessionId 256", f.r.ReleaseSession, map[string]any{"sessionId": units(256)}, true},
		{"releaseSession: sessionId 257", f.r.ReleaseSession, map[string]any{"sessionId": units(257)}, false},
		{"releaseSession: no sessionId", f.r.ReleaseSession, map[string]any{}, false},
		{"releaseSession: unknown field", f.r.ReleaseSession, map[string]any{"sessionId": "s", "leaseId": l.ID}, false},

		{"act: requestId 128", f.r.Act, with(act, "request.requestId", units(128)), true},
		{"act: requestId 129", f.r.Act, with(act, "request.requestId", units(129)), false},
		{"act: reserved requestId", f.r.Act, with(act, "request.requestId", "batch:1"), false},
		{"act: sessionId 257", f.r.Act, with(act, "sessionId", units(257)), false},
		{"act: leaseId 257", f.r.Act, with(act, "request.leaseId", units(257)), false},
		{"act: documentEpoch 512", f.r.Act, with(act, "request.documentEpoch", units(512)), true},
		{"act: documentEpoch 513", f.r.Act, with(act, "request.documentEpoch", units(513)), false},
		{"act: ref 128", f.r.Act, with(act, "request.action.ref", units(128)), true},
		{"act: ref 129", f.r.Act, with(act, "request.action.ref", units(129)), false},
		{"act: text 10,000", f.r.Act, with(act, "request.action.text", units(browser.MaxActionText)), true},
		{"act: text 10,001", f.r.Act, with(act, "request.action.text", units(browser.MaxActionText+1)), false},
		{"act: text 10,002 units in 5,001 characters", f.r.Act, with(act, "request.action.text", units(browser.MaxActionText+2)), false},
		{"act: expected 2,000", f.r.Act, with(act, "request.action.expected", expect(units(browser.MaxExpectedText))), true},
		{"act: expected 2,001", f.r.Act, with(act, "request.action.expected", expect(units(browser.MaxExpectedText+1))), false},
		{"act: blank expectation", f.r.Act, with(act, "request.action.expected", expect("  ")), false},
		{"act: another expectation kind", f.r.Act, with(act, "request.action.expected", map[string]any{"kind": "url", "text": "x"}), false},
		{"act: timeout 1", f.r.Act, with(act, "request.timeoutMs", 1), true},
		{"act: timeout 0", f.r.Act, with(act, "request.timeoutMs", 0), false},
		{"act: timeout 30,000", f.r.Act, with(act, "request.timeoutMs", 30000), true},
		{"act: timeout 30,001", f.r.Act, with(act, "request.timeoutMs", 30001), false},
		{"act: unknown kind", f.r.Act, with(act, "request.action", map[string]any{"kind": "doubleclick", "ref": greet}), false},
		{"act: unknown key", f.r.Act, with(act, "request.action", map[string]any{"kind": "press", "ref": greet, "key": "F13"}), false},
		{"act: press with shift", f.r.Act, with(act, "request.action", map[string]any{"kind": "press", "ref": greet, "key": "Tab", "shift": true}), true},
		{"act: fill with shift", f.r.Act, with(act, "request.action.shift", true), false},
		{"act: fill with a key", f.r.Act, with(act, "request.action.key", "Enter"), false},
		{"act: fill without text", f.r.Act, with(act, "request.action.text", nil), false},
		{"act: click with text", f.r.Act, with(act, "request.action", map[string]any{"kind": "click", "ref": greet, "text": "x"}), false},
		{"act: click with a key", f.r.Act, with(act, "request.action", map[string]any{"kind": "click", "ref": greet, "key": "Enter"}), false},
		{"act: press with text", f.r.Act, with(act, "request.action", map[string]any{"kind": "press", "ref": greet, "key": "Enter", "text": "x"}), false},
		{"act: unknown action field", f.r.Act, with(act, "request.action.force", true), false},
		{"act: unknown request field", f.r.Act, with(act, "request.navigate", true), false},
		{"act: frameId 129", f.r.Act, with(act, "request.frame", map[string]any{"frameId": units(129), "documentEpoch": o.DocumentEpoch}), false},
		{"act: frame of another document", f.r.Act, with(act, "request.frame", map[string]any{"frameId": "f", "documentEpoch": "C:LC1"}), false},

		{"batch: approvalId 128", f.r.Batch, with(batch, "approvalId", units(128)), true},
		{"batch: approvalId 129", f.r.Batch, with(batch, "approvalId", units(129)), false},
		{"batch: no approvalId", f.r.Batch, with(batch, "approvalId", nil), false},
		{"batch: requestId 129", f.r.Batch, with(batch, "request.requestId", units(129)), false},
		{"batch: reserved requestId", f.r.Batch, with(batch, "request.requestId", "batch:x"), false},
		{"batch: documentEpoch 513", f.r.Batch, with(batch, "request.documentEpoch", units(513)), false},
		{"batch: leaseId 257", f.r.Batch, with(batch, "request.leaseId", units(257)), false},
		{"batch: 8 steps", f.r.Batch, with(batch, "request.steps", steps(browser.MaxBatchSteps)), true},
		{"batch: 9 steps", f.r.Batch, with(batch, "request.steps", steps(browser.MaxBatchSteps+1)), false},
		{"batch: no steps", f.r.Batch, with(batch, "request.steps", steps(0)), false},
		{"batch: timeout 30,000", f.r.Batch, with(batch, "request.timeoutMs", 30000), true},
		{"batch: timeout 30,001", f.r.Batch, with(batch, "request.timeoutMs", 30001), false},
		{"batch: timeout 0", f.r.Batch, with(batch, "request.timeoutMs", 0), false},
		{"batch: step timeout 30,000", f.r.Batch, with(batch, "request.steps", []any{map[string]any{"timeoutMs": 30000, "action": steps(1)[0].(map[string]any)["action"]}}), true},
		{"batch: step timeout 30,001", f.r.Batch, with(batch, "request.steps", []any{map[string]any{"timeoutMs": 30001, "action": steps(1)[0].(map[string]any)["action"]}}), false},
		{"batch: a step's invalid action", f.r.Batch, with(batch, "request.steps", []any{map[string]any{"action": map[string]any{"kind": "press", "ref": greet}}}), false},
		{"batch: a step in a frame", f.r.Batch, with(batch, "request.steps", []any{map[string]any{"frame": frame, "action": steps(1)[0].(map[string]any)["action"]}}), false},
		{"batch: a plan in a frame", f.r.Batch, with(batch, "request.frame", frame), false},
	}...)

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params := tc.params
			if p, ok := params.(map[string]any); ok && p["request"] != nil && !strings.Contains(tc.name, "requestId") {
				params = with(p, "request.requestId", fmt.Sprint("bounds-", i)) // every action its own
			}
			before := len(f.p.methods())
			_, err := invoke[any](t, tc.m, f.c, params)
			if invalid := rpc.CodeOf(err) == wire.CodeInvalidRequest; invalid == tc.ok {
				t.Fatalf("%v (ok %v)", err, tc.ok)
			}
			if !tc.ok && len(f.p.methods()) != before {
				t.Errorf("the provider was asked %v", f.p.methods()[before:])
			}
		})
	}
}

// leasedMethods are the methods on a lease, each with its params for
// session "s" and a lease.
func leasedMethods(f *fixture, leaseID, epoch string) map[string]func(c Client) error {
	call := func(m method, params map[string]any) func(Client) error {
		return func(c Client) error {
			_, err := invoke[any](f.t, m, c, params)
			return err
		}
	}
	lp := map[string]any{"sessionId": "s", "leaseId": leaseID}
	return map[string]func(Client) error{
		"observe":       call(f.r.Observe, lp),
		"readPage":      call(f.r.ReadPage, lp),
		"frames":        call(f.r.Frames, lp),
		"capture":       call(f.r.Capture, lp),
		"validateLease": call(f.r.ValidateLease, lp),
		"act": call(f.r.Act, map[string]any{"sessionId": "s", "request": map[string]any{"requestId": "act-x", "leaseId": leaseID, "documentEpoch": epoch,
			"action": map[string]any{"kind": "press", "ref": "r1", "key": "Enter"}}}),
		"batch": call(f.r.Batch, map[string]any{"sessionId": "s", "approvalId": "a", "request": map[string]any{"requestId": "batch-x", "leaseId": leaseID,
			"documentEpoch": epoch, "steps": []any{map[string]any{"action": map[string]any{"kind": "press", "ref": "r1", "key": "Enter"}}}}}),
	}
}

// TestAnotherOwnersLease: a lease belongs to a session on a connection;
// anyone else gets LEASE_REVOKED and the provider is not asked.
func TestAnotherOwnersLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("mine")
	sent := len(f.p.methods())
	other := newFakeClient(2)
	for name, call := range leasedMethods(f, l.ID, "F:L1") {
		if err := call(other); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
			t.Errorf("%s by another connection: %v, want LEASE_REVOKED", name, err)
		}
		if err := call(f.c); rpc.CodeOf(err) != wire.CodeLeaseRevoked { // session "s", not "mine"
			t.Errorf("%s by another session: %v, want LEASE_REVOKED", name, err)
		}
	}
	if _, err := invoke[any](t, f.r.Release, other, map[string]any{"sessionId": "mine", "leaseId": l.ID}); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Errorf("release by another connection: %v", err)
	}
	if len(f.p.methods()) != sent || other.approvals() != "" {
		t.Fatalf("the provider was asked %v", f.p.methods()[sent:])
	}
	if len(f.r.leases.Live()) != 1 {
		t.Fatal("the lease ended")
	}
}

// TestProviderGone: once the browser's connection is gone (before the
// broker ends its leases), every method that needs it is CONNECTION_LOST,
// and validateLease says the lease is not valid.
func TestProviderGone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	l := f.claim("s")
	f.h.remove(f.p)
	sent := len(f.p.methods())
	for name, call := range leasedMethods(f, l.ID, "F:L1") {
		want := wire.CodeConnectionLost
		if name == "validateLease" {
			want = wire.CodeLeaseRevoked
		}
		if err := call(f.c); rpc.CodeOf(err) != want {
			t.Errorf("%s: %v, want %s", name, err, want)
		}
	}
	for name, params := range map[string]map[string]any{
		"tabs":  {"sessionId": "s", "instanceId": "inst"},
		"claim": {"sessionId": "s", "instanceId": "inst", "tab": "inst:2"},
	} {
		m := map[string]method{"tabs": f.r.Tabs, "claim": f.r.Claim}[name]
		if _, err := invoke[any](t, m, f.c, params); rpc.CodeOf(err) != wire.CodeConnectionLost {
			t.Errorf("%s: %v, want CONNECTION_LOST", name, err)
		}
	}
	if len(f.p.methods()) != sent {
		t.Fatalf("a gone provider was called: %v", f.p.methods()[sent:])
	}
	if got := must[[]browser.Instance](t, f.r.Instances, f.c, map[string]any{}); len(got) != 0 {
		t.Fatalf("instances %+v", got)
	}
}

// TestMissingCapability: a provider without an optional capability is
// never sent its method; the client gets UNSUPPORTED_CAPABILITY.
func TestMissingCapability(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		lacks  string
		call   func(f *fixture, leaseID string, frame map[string]any) error
		unsent string
	}{
		{"readPage without ax.page.v1", browser.CapAXPage, func(f *fixture, id string, _ map[string]any) error {
			_, err := readWindow(f.t, f, id, nil)
			return err
		}, browser.ProviderAXPage},
		{"frames without frames.list.v1", browser.CapFramesList, func(f *fixture, id string, _ map[string]any) error {
			_, err := invoke[any](f.t, f.r.Frames, f.c, map[string]any{"sessionId": "s", "leaseId": id})
			return err
		}, browser.ProviderFramesList},
		{"capture without capture.v1", browser.CapCapture, func(f *fixture, id string, _ map[string]any) error {
			_, err := invoke[any](f.t, f.r.Capture, f.c, map[string]any{"sessionId": "s", "leaseId": id})
			return err
		}, browser.ProviderCapture},
		{"a frame observation without ax.read-frame.v1", browser.CapFrameRead, func(f *fixture, id string, frame map[string]any) error {
			_, err := invoke[any](f.t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": id, "frame": frame})
			return err
		}, browser.ProviderAXRead},
		{"a frame query without ax.read-frame.v1", browser.CapFrameRead, func(f *fixture, id string, frame map[string]any) error {
			_, err := invoke[any](f.t, f.r.Observe, f.c, map[string]any{"sessionId": "s", "leaseId": id, "frame": frame, "query": map[string]any{"name": "Inner"}})
			return err
		}, browser.ProviderAXFind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var caps []string
			for _, c := range allCaps() {
				if c != tc.lacks {
					caps = append(caps, c)
				}
			}
			f := newFixture(t, Config{}, caps...)
			f.p.page.withChildFrame()
			l := f.claim("s")
			frame := map[string]any{"frameId": "frame-0", "documentEpoch": "C:LC1"}
			if f.p.caps[browser.CapFramesList] {
				frame = selector(must[browser.FrameInventory](t, f.r.Frames, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID}).Frames[1])
			}
			if err := tc.call(f, l.ID, frame); rpc.CodeOf(err) != wire.CodeUnsupportedCapability {
				t.Fatalf("%v, want UNSUPPORTED_CAPABILITY", err)
			}
			if f.p.count(tc.unsent) != 0 {
				t.Fatalf("%s was sent", tc.unsent)
			}
		})
	}
}

// TestBrokenContract: an answer that breaks the provider contract is an
// error wrapping errProvider (the broker answers INTERNAL_ERROR and logs
// the cause), never a result built from it.
func TestBrokenContract(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method, answer string
		call                 func(f *fixture, leaseID string) error
	}{
		{"ax.read malformed", browser.ProviderAXRead, `{"documentEpoch":"F:L1","nodes":{}}`, observeCall(nil)},
		{"ax.read without a document", browser.ProviderAXRead, `{"url":"https://app.test/","nodes":[]}`, observeCall(nil)},
		{"ax.read not JSON", browser.ProviderAXRead, `{"documentEpoch":`, observeCall(nil)},
		{"ax.find malformed", browser.ProviderAXFind, `{"documentEpoch":"F:L1","nodes":[{"backendNodeId":"4"}]}`, observeCall(map[string]any{"name": "Greet"})},
		{"ax.find without a document", browser.ProviderAXFind, `{"url":"https://app.test/","nodes":[]}`, observeCall(map[string]any{"name": "Greet"})},
		{"ax.page without a document", browser.ProviderAXPage, `{"url":"https://app.test/","nodes":[]}`, func(f *fixture, id string) error {
			_, err := readWindow(f.t, f, id, nil)
			return err
		}},
		{"ax.page malformed", browser.ProviderAXPage, `{"documentEpoch":"F:L1","resume":"1"}`, func(f *fixture, id string) error {
			_, err := readWindow(f.t, f, id, nil)
			return err
		}},
		{"frames.list malformed", browser.ProviderFramesList, `[]`, func(f *fixture, id string) error {
			_, err := invoke[any](f.t, f.r.Frames, f.c, map[string]any{"sessionId": "s", "leaseId": id})
			return err
		}},
		{"frames.list without the main frame", browser.ProviderFramesList, `{"documentEpoch":"F:L1","url":"https://app.test/","frames":[]}`, func(f *fixture, id string) error {
			_, err := invoke[any](f.t, f.r.Frames, f.c, map[string]any{"sessionId": "s", "leaseId": id})
			return err
		}},
		{"capture malformed", browser.ProviderCapture, `{"data":1}`, func(f *fixture, id string) error {
			_, err := invoke[any](f.t, f.r.Capture, f.c, map[string]any{"sessionId": "s", "leaseId": id})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Config{})
			l := f.claim("s")
			f.p.answerRaw(tc.method, tc.answer)
			if err := tc.call(f, l.ID); !errors.Is(err, errProvider) || rpc.CodeOf(err) != wire.CodeInternalError {
				t.Fatalf("%v, want errProvider", err)
			}
			must[map[string]bool](t, f.r.ValidateLease, f.c, map[string]any{"sessionId": "s", "leaseId": l.ID}) // the lease stays
		})
	}
}

func observeCall(query map[string]any) func(f *fixture, leaseID string) error {
	return func(f *fixture, id string) error {
		params := map[string]any{"sessionId": "s", "leaseId": id}
		if query != nil {
			params["query"] = query
		}
		_, err := invoke[any](f.t, f.r.Observe, f.c, params)
		return err
	}
}

// FuzzProviderAnswer feeds arbitrary answers to the methods that read
// them: each call ends in a result that encodes, or in an error with a
// code or wrapping errProvider, never in a panic.
func FuzzProviderAnswer(f *testing.F) {
	f.Add(uint8(0), []byte(`{"documentEpoch":"F:L1","url":"https://app.test/form","nodes":[{"backendNodeId":4,"role":"button","name":"Go"}]}`))
	f.Add(uint8(1), []byte(`{"documentEpoch":"F:L1","url":"https://app.test/form","nodes":[{"backendNodeId":-1,"role":"link","name":""}],"truncated":true}`))
	f.Add(uint8(2), []byte(`{"documentEpoch":"F:L1","url":"https://app.test/form","nodes":[{"axId":"1"},{"axId":"2","parentAxId":"1","role":"StaticText","name":"x"}],"resume":["1","2"]}`))
	f.Add(uint8(3), []byte(`{"documentEpoch":"F:L1","url":"https://app.test/form","frames":[{"frameId":"F","loaderId":"L1","origin":"https://app.test","local":true},{"frameId":"C","parentId":"F","local":false}]}`))
	f.Add(uint8(4), []byte(`{"documentEpoch":"F:L1","url":"https://app.test/form","capturedAt":1,"mimeType":"image/jpeg","data":"/9j/4A==","viewport":{"width":1,"height":1},"redaction":{"policy":"cross-origin-frames"}}`))
	f.Add(uint8(5), []byte(`[{"id":"inst:1","instanceId":"inst","url":"https://app.test/","title":"x"}]`))
	f.Add(uint8(6), []byte(`{"granted":true,"documentEpoch":"F:L1"}`))
	f.Add(uint8(7), []byte(`{"quads":[[0,0,1,0,1,1,0,1]]}`))
	f.Add(uint8(8), []byte(`{"documentEpoch":"F:L1",`))
	f.Add(uint8(8), []byte(`{"relation":"outside","pseudo":true,"cover":{"backendNodeId":2,"tag":"DIV","frameId":"F"}}`))
	f.Add(uint8(8), []byte(`{"relation":"label","cover":null}`))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		fx := newFixture(t, Config{}, append(allCaps(), browser.CapDOMHit)...)
		lp := map[string]any{"sessionId": "s", "leaseId": ""}
		targets := []struct {
			method string
			leased bool
			call   func() error
		}{
			{browser.ProviderAXRead, true, func() error { _, err := invoke[any](t, fx.r.Observe, fx.c, lp); return err }},
			{browser.ProviderAXFind, true, func() error {
				_, err := invoke[any](t, fx.r.Observe, fx.c, with(lp, "query", map[string]any{"name": "Go"}))
				return err
			}},
			{browser.ProviderAXPage, true, func() error { _, err := invoke[any](t, fx.r.ReadPage, fx.c, lp); return err }},
			{browser.ProviderFramesList, true, func() error { _, err := invoke[any](t, fx.r.Frames, fx.c, lp); return err }},
			{browser.ProviderCapture, true, func() error { _, err := invoke[any](t, fx.r.Capture, fx.c, lp); return err }},
			{browser.ProviderTabsList, false, func() error {
				_, err := invoke[any](t, fx.r.Tabs, fx.c, map[string]any{"sessionId": "s", "instanceId": "inst"})
				return err
			}},
			{browser.ProviderLeaseGrant, false, func() error {
				_, err := invoke[any](t, fx.r.Claim, fx.c, map[string]any{"sessionId": "s", "instanceId": "inst", "tab": "inst:1"})
				return err
			}},
			{browser.ProviderCDP, true, func() error {
				o := fx.observe("s", lp["leaseId"].(string))
				_, err := invoke[any](t, fx.r.Act, fx.c, map[string]any{"sessionId": "s", "request": map[string]any{"requestId": "x",
					"leaseId": lp["leaseId"], "documentEpoch": o.DocumentEpoch, "timeoutMs": 100,
					"action": map[string]any{"kind": "click", "ref": refOf(t, o.Nodes, "button", "Greet")}}})
				return err
			}},
			{browser.ProviderDOMHit, true, func() error {
				o := fx.observe("s", lp["leaseId"].(string))
				_, err := invoke[any](t, fx.r.Act, fx.c, map[string]any{"sessionId": "s", "request": map[string]any{"requestId": "x",
					"leaseId": lp["leaseId"], "documentEpoch": o.DocumentEpoch, "timeoutMs": 100,
					"action": map[string]any{"kind": "click", "ref": refOf(t, o.Nodes, "button", "Greet")}}})
				return err
			}},
		}
		target := targets[int(which)%len(targets)]
		if target.leased {
			lp["leaseId"] = fx.claim("s").ID
		}
		fx.p.answerRaw(target.method, string(data))
		if err := target.call(); err != nil && !errors.Is(err, errProvider) {
			if _, ok := errors.AsType[*wire.Error](err); !ok {
				t.Fatalf("an error with no code: %v", err)
			}
		}
	})
}
