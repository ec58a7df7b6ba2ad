package test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// startCapable starts a scripted provider that advertises frames.list and
// capture, as the extension does.
func startCapable(t *testing.T, b *testenv.Broker, id string) *scripted {
	p := b.OwnerPeer(t)
	h := testenv.ProviderHello("", id)
	h["capabilities"] = append(browser.Required(), browser.CapFramesList, browser.CapCapture)
	if r := p.Call("hello", h); !r.OK {
		t.Fatalf("provider hello: %s", r.Code)
	}
	s := &scripted{t: t, peer: p, reply: map[string]func(*wire.Envelope) (any, wire.Code){}}
	go s.serve()
	return s
}

// leasedPage starts a broker with a scripted provider (start) showing
// standardPage, claims its tab for session "s" and returns the provider,
// the client, the lease and the page's document epoch.
func leasedPage(t *testing.T, start func(*testing.T, *testenv.Broker, string) *scripted) (*scripted, *client.Client, browser.LeaseResult, string) {
	b := testenv.StartBroker(t)
	s := start(t, b, "inst")
	epoch, text := "F:L1", []string{"DSH demo"}
	standardPage(s, &epoch, &text)
	c := b.Client(t, testenv.ClientOptions())
	return s, c, claimTab(t, c, "s"), epoch
}

// jpegOf returns base64 of n bytes that start like a JPEG.
func jpegOf(n int) string {
	b := make([]byte, n)
	copy(b, []byte{0xFF, 0xD8, 0xFF, 0xE0})
	return base64.StdEncoding.EncodeToString(b)
}

func TestCaptureChecksWhatTheProviderSends(t *testing.T) {
	t.Parallel()
	s, c, l, epoch := leasedPage(t, startCapable)
	params := map[string]any{"sessionId": "s", "leaseId": l.ID}

	shot := func(mut func(map[string]any)) map[string]any {
		v := map[string]any{
			"documentEpoch": epoch, "url": pageURL, "capturedAt": 1700000000000, "mimeType": "image/jpeg",
			"data": jpegOf(30), "viewport": map[string]any{"width": 800, "height": 600, "pageX": 0, "pageY": 40},
			"redaction": map[string]any{"policy": "cross-origin-frames", "frames": 2, "regions": 1},
		}
		if mut != nil {
			mut(v)
		}
		return v
	}
	tests := []struct {
		name  string
		reply map[string]any
		code  wire.Code
		want  wire.Code
	}{
		{"a coherent screenshot", shot(nil), "", ""},
		{"data at the cap (800,000 characters)", shot(func(v map[string]any) { v["data"] = jpegOf(600000) }), "", ""},
		{"data past the cap", shot(func(v map[string]any) { v["data"] = jpegOf(600001) }), "", wire.CodeQueueFull},
		{"not a JPEG", shot(func(v map[string]any) { v["data"] = base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n")) }), "", wire.CodeInternalError},
		{"not base64", shot(func(v map[string]any) { v["data"] = "/9j/!!" }), "", wire.CodeInternalError},
		{"another type", shot(func(v map[string]any) { v["mimeType"] = "image/png" }), "", wire.CodeInternalError},
		{"more regions than frames", shot(func(v map[string]any) {
			v["redaction"] = map[string]any{"policy": "cross-origin-frames", "frames": 1, "regions": 2}
		}), "", wire.CodeInternalError},
		{"another policy", shot(func(v map[string]any) { v["redaction"] = map[string]any{"policy": "none", "frames": 0, "regions": 0} }), "", wire.CodeInternalError},
		{"an empty viewport", shot(func(v map[string]any) { v["viewport"] = map[string]any{"width": 0, "height": 600} }), "", wire.CodeInternalError},
		{"the page kept changing", nil, wire.CodeStaleTarget, wire.CodeStaleTarget},
		{"the page cannot be captured safely", nil, wire.CodeUnsupportedCapability, wire.CodeUnsupportedCapability},
	}
	for _, tc := range tests {
		s.on("capture", func(*wire.Envelope) (any, wire.Code) { return tc.reply, tc.code })
		raw, err := c.Call(context.Background(), "browser.capture", params)
		if tc.want != "" {
			if rpc.CodeOf(err) != tc.want {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got browser.Screenshot
		json.Unmarshal(raw, &got)
		if got.Tab != l.Tab || got.Data != tc.reply["data"] || got.DocumentEpoch != epoch || got.Viewport.PageY != 40 || got.Redaction.Frames != 2 {
			t.Errorf("%s: %+v", tc.name, got)
		}
		if strings.Contains(string(raw), pageURL) {
			t.Errorf("%s: the screenshot carries the provider's url: %s", tc.name, raw)
		}
	}

	// The provider's lease object is sent, the screenshot only under it.
	var sent struct{ Lease struct{ ID, Token string } }
	for _, call := range s.calls {
		if call.Method == "capture" {
			json.Unmarshal(call.Params, &sent)
		}
	}
	if sent.Lease.ID != l.ID || sent.Lease.Token == "" {
		t.Errorf("capture sent with lease %+v", sent.Lease)
	}

	// A screenshot of another origin ends the origin-scoped lease.
	s.on("capture", func(*wire.Envelope) (any, wire.Code) {
		return shot(func(v map[string]any) { v["url"] = "https://elsewhere.test/" }), ""
	})
	if _, err := c.Call(context.Background(), "browser.capture", params); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("capture of another origin: %v, want LEASE_REVOKED", err)
	}
	if _, err := c.Call(context.Background(), "browser.validateLease", params); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Fatalf("validateLease after the origin changed: %v, want LEASE_REVOKED", err)
	}
}

func TestFramesChecksWhatTheProviderSends(t *testing.T) {
	t.Parallel()
	s, c, l, epoch := leasedPage(t, startCapable)
	params := map[string]any{"sessionId": "s", "leaseId": l.ID}

	main := map[string]any{"frameId": "F", "loaderId": "L1", "origin": "https://app.test", "local": true}
	list := func(frames ...map[string]any) map[string]any {
		return map[string]any{"documentEpoch": epoch, "url": pageURL, "truncated": false, "frames": append([]map[string]any{main}, frames...)}
	}
	child := func(id, parent, origin string, local bool) map[string]any {
		f := map[string]any{"parentId": parent, "local": local}
		if id != "" {
			f["frameId"] = id
		}
		if origin != "" {
			f["origin"] = origin
		}
		if local {
			f["loaderId"] = "L-" + id
		}
		return f
	}
	call := func(reply map[string]any) (browser.FrameInventory, error) {
		s.on("frames.list", func(*wire.Envelope) (any, wire.Code) { return reply, "" })
		raw, err := c.Call(context.Background(), "browser.frames", params)
		var inv browser.FrameInventory
		json.Unmarshal(raw, &inv)
		return inv, err
	}

	inv, err := call(list(
		child("A", "F", "https://app.test", true),
		child("B", "A", "https://other.test", true),
		child("C", "F", "https://app.test/path", true), // not a bare origin
		child("D", "F", "://", true),                   // opaque
		child("E", "F", "", false),                     // out of process
		child("", "F", "", false),                      // out of process, no ID
	))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range inv.Frames {
		got = append(got, fmt.Sprintf("%s %s %s %v", f.Origin, f.OriginRelation, f.ContextStatus, f.IsMain))
		if !strings.HasPrefix(f.ID, "frame-") || strings.ContainsAny(f.ID, "ABCDEFK") { // provider IDs never show
			t.Errorf("frame ID %q is not opaque", f.ID)
		}
	}
	want := []string{
		"https://app.test same-origin known true", "https://app.test same-origin known false",
		"https://other.test cross-origin known false", " opaque known false", " opaque known false",
		" opaque unavailable false", " opaque unavailable false",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("frames:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if inv.Frames[2].ParentID != inv.Frames[1].ID || inv.Frames[1].ParentID != inv.Frames[0].ID || inv.Frames[0].DocumentEpoch != epoch {
		t.Errorf("parents: %+v", inv.Frames)
	}
	if again, _ := call(list(child("A", "F", "https://app.test", true))); again.Frames[1].ID != inv.Frames[1].ID {
		t.Errorf("frame A's ID changed: %s then %s", inv.Frames[1].ID, again.Frames[1].ID)
	}

	// A sandboxed main document (CSP sandbox) has an opaque origin: listed
	// as such, not refused.
	sandboxed := list()
	sandboxed["frames"] = []map[string]any{{"frameId": "F", "loaderId": "L1", "origin": "null", "local": true}}
	if inv, err := call(sandboxed); err != nil || inv.Frames[0].OriginRelation != "opaque" || !inv.Frames[0].IsMain {
		t.Errorf("sandboxed main document: %+v %v", inv, err)
	}

	many := func(n int) map[string]any {
		var fs []map[string]any
		for i := range n {
			fs = append(fs, child(fmt.Sprint("K", i), "F", "https://app.test", true))
		}
		return list(fs...)
	}
	if inv, err := call(many(browser.MaxFrames)); err != nil || len(inv.Frames) != browser.MaxFrames+1 {
		t.Errorf("%d child frames: %d listed, %v", browser.MaxFrames, len(inv.Frames), err)
	}
	bad := map[string]map[string]any{
		"past the frame budget":    many(browser.MaxFrames + 1),
		"a parent after its child": list(child("B", "A", "https://app.test", true), child("A", "F", "https://app.test", true)),
		"a parent out of sight":    list(child("E", "F", "", false), child("B", "E", "https://app.test", true)),
		"a frame listed twice":     list(child("A", "F", "https://app.test", true), child("A", "F", "https://app.test", true)),
		"an unseen frame twice":    list(child("E", "F", "", false), child("E", "F", "", false)),
		"a cycle through the main": list(child("F", "F", "https://app.test", true)),
		"no main frame":            {"documentEpoch": epoch, "url": pageURL, "frames": []any{}},
		"another main document":    {"documentEpoch": "F:L2", "url": pageURL, "frames": []any{main}},
	}
	for name, reply := range bad {
		if _, err := call(reply); rpc.CodeOf(err) != wire.CodeInternalError {
			t.Errorf("%s: %v, want INTERNAL_ERROR", name, err)
		}
	}
}

func TestCaptureNeedsTheProviderCapability(t *testing.T) {
	t.Parallel()
	s, c, l, _ := leasedPage(t, startScripted) // the required capabilities only
	params := map[string]any{"sessionId": "s", "leaseId": l.ID}
	for _, m := range []string{"browser.capture", "browser.frames"} {
		if _, err := c.Call(context.Background(), m, params); rpc.CodeOf(err) != wire.CodeUnsupportedCapability {
			t.Errorf("%s: %v, want UNSUPPORTED_CAPABILITY", m, err)
		}
	}
	for _, m := range s.methods() {
		if m == "capture" || m == "frames.list" {
			t.Errorf("the broker sent %s to a provider without it", m)
		}
	}
	raw, err := c.Call(context.Background(), "browser.instances", map[string]any{})
	if err != nil || !strings.Contains(string(raw), `"screenshot":false`) || !strings.Contains(string(raw), `"ax":true`) {
		t.Errorf("instances: %s %v", raw, err)
	}
	if raw, err := c.Call(context.Background(), "browser.validateLease", params); err != nil || string(raw) != `{"valid":true}` {
		t.Errorf("validateLease: %s %v", raw, err)
	}
	if _, err := c.Call(context.Background(), "browser.validateLease", map[string]any{"sessionId": "other", "leaseId": l.ID}); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
		t.Errorf("validateLease by another session: %v, want LEASE_REVOKED", err)
	}
	if _, err := c.Call(context.Background(), "browser.validateLease", map[string]any{"sessionId": "s", "leaseId": l.ID, "x": 1}); rpc.CodeOf(err) != wire.CodeInvalidRequest {
		t.Errorf("validateLease with an unknown field: %v, want INVALID_REQUEST", err)
	}
}
