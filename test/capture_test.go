package test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// box is an element's viewport rectangle in CSS pixels.
type box struct{ X, Y, W, H float64 }

// The /frames page: every frame is a 150×100 blue swatch on a green page, so
// a pixel tells whether a frame was painted over. Positions as in
// internal/testpages/pages/frames.html.
var (
	sameBox    = box{20, 60, 150, 100}
	foreignBox = map[string]box{
		"other origin":               {190, 60, 150, 100},
		"other site":                 {360, 60, 150, 100},
		"same origin, foreign child": {530, 60, 150, 100},
		"sandboxed":                  {20, 200, 150, 100},
		"closed shadow root":         {190, 200, 150, 100},
	}
)

func TestE2ECaptureRedactsForeignFrames(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab, target := s.Tab(t, s.Pages.URL("/frames"))
	l := s.Claim(t, "s", tab)

	t.Run("inventory", func(t *testing.T) {
		inv := frameList(t, s, l.ID)
		if inv.Tab != tab || inv.DocumentEpoch == "" || len(inv.Frames) != 10 {
			t.Fatalf("inventory %+v, want 10 frames of %s", inv, tab)
		}
		// main; same and nested; other origin, nested child, hidden, below;
		// other site, sandboxed, closed shadow root (out of process).
		kinds := map[string]int{}
		byID := map[string]browser.Frame{}
		for _, f := range inv.Frames {
			kinds[fmt.Sprintf("%s/%s/main=%v", f.OriginRelation, f.ContextStatus, f.IsMain)]++
			byID[f.ID] = f
		}
		want := map[string]int{
			"same-origin/known/main=true": 1, "same-origin/known/main=false": 2,
			"cross-origin/known/main=false": 4, "opaque/unavailable/main=false": 3,
		}
		if fmt.Sprint(kinds) != fmt.Sprint(want) {
			t.Errorf("frame kinds %v, want %v", kinds, want)
		}
		main := inv.Frames[0]
		if !main.IsMain || main.DocumentEpoch != inv.DocumentEpoch || main.Origin != s.Pages.Origin() || main.ParentID != "" {
			t.Errorf("main frame %+v", main)
		}
		nestedChild := 0
		for _, f := range inv.Frames[1:] {
			parent, ok := byID[f.ParentID]
			if !ok {
				t.Errorf("frame %+v: parent not listed", f)
				continue
			}
			if !parent.IsMain {
				nestedChild++
				if parent.OriginRelation != "same-origin" || f.Origin != s.Pages.Other().Origin() {
					t.Errorf("nested frame %+v under %+v", f, parent)
				}
			}
			if f.OriginRelation == "opaque" && f.Origin != "" {
				t.Errorf("opaque frame with an origin: %+v", f)
			}
		}
		if nestedChild != 1 {
			t.Errorf("%d frames below a child frame, want 1", nestedChild)
		}
		if !inv.Truncated {
			t.Error("out-of-process frames may have children that are not listed, but truncated is false")
		}
		if again := frameList(t, s, l.ID); slices.CompareFunc(again.Frames, inv.Frames, func(a, b browser.Frame) int {
			return strings.Compare(a.ID, b.ID)
		}) != 0 {
			t.Errorf("frame IDs changed between two reads:\n%+v\n%+v", inv.Frames, again.Frames)
		}
	})

	t.Run("reading a frame", func(t *testing.T) {
		inv := frameList(t, s, l.ID)
		var nested, nestedChild, site, main browser.Frame
		byID := map[string]browser.Frame{}
		for _, f := range inv.Frames {
			byID[f.ID] = f
		}
		for _, f := range inv.Frames {
			switch p := byID[f.ParentID]; {
			case f.IsMain:
				main = f
			case !p.IsMain && f.ParentID != "":
				nestedChild, nested = f, p
			case f.ContextStatus == "unavailable" && site.ID == "":
				site = f
			}
		}
		observeFrame := func(f browser.Frame, epoch string) (browser.Observation, error) {
			raw, err := s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID,
				"frame": map[string]any{"frameId": f.ID, "documentEpoch": epoch}})
			var o browser.Observation
			json.Unmarshal(raw, &o)
			return o, err
		}
		o, err := observeFrame(nested, nested.DocumentEpoch)
		if err != nil {
			t.Fatalf("observe the same-origin frame: %v", err)
		}
		if o.Scope.Kind != "frame" || o.Scope.FrameID != nested.ID || o.DocumentEpoch != nested.DocumentEpoch ||
			!strings.Contains(strings.Join(o.Text, "|"), "Nested page") || !strings.HasSuffix(o.URL, "/nested") {
			t.Errorf("frame observation %+v", o)
		}
		ref := refOf(t, o, "button", "Nested button")
		// A query inside the frame finds the same element.
		raw, err := s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID,
			"frame": map[string]any{"frameId": nested.ID, "documentEpoch": nested.DocumentEpoch}, "query": map[string]any{"name": "Nested button", "role": "button"}})
		var q browser.Observation
		json.Unmarshal(raw, &q)
		if err != nil || len(q.Nodes) != 1 || q.Nodes[0].ID != ref || q.Scope.Kind != "query" || q.Scope.FrameID != nested.ID {
			t.Errorf("query in the frame: %s %v", raw, err)
		}
		// The frame read window by window.
		raw, err = s.Call(t, "browser.readPage", map[string]any{"sessionId": "s", "leaseId": l.ID,
			"options": map[string]any{"frame": map[string]any{"frameId": nested.ID, "documentEpoch": nested.DocumentEpoch}}})
		var w browser.PageWindow
		json.Unmarshal(raw, &w)
		if err != nil || w.Scope.Kind != "frame" || w.Scope.FrameID != nested.ID || w.Page.Continuation != "" ||
			len(w.Nodes) == 0 || w.Nodes[0].Name != "Nested button" || w.DocumentEpoch != nested.DocumentEpoch {
			t.Errorf("readPage of the frame: %s %v", raw, err)
		}
		if _, err := s.Call(t, "browser.readPage", map[string]any{"sessionId": "s", "leaseId": l.ID,
			"options": map[string]any{"frame": map[string]any{"frameId": nestedChild.ID, "documentEpoch": nestedChild.DocumentEpoch}}}); rpc.CodeOf(err) != wire.CodePolicyDenied {
			t.Errorf("readPage of a cross-origin frame: %v, want POLICY_DENIED", err)
		}

		// A frame's ref is clicked with the frame named, and verified there.
		main0 := s.Observe(t, "s", l.ID)
		if res := s.Act(t, "s", main0, l.ID, map[string]any{"kind": "click", "ref": ref}); res.Code != wire.CodeInvalidRequest || res.Dispatch != "notDispatched" {
			t.Errorf("click on a frame's ref without the frame: %+v", res)
		}
		frameAct := func(action map[string]any, epoch string, frame browser.Frame) (browser.ActionResult, error) {
			raw, err := s.Call(t, "browser.act", map[string]any{"sessionId": "s", "request": map[string]any{
				"requestId": fmt.Sprintf("frame-%d", time.Now().UnixNano()), "leaseId": l.ID, "documentEpoch": epoch,
				"action": action, "frame": map[string]any{"frameId": frame.ID, "documentEpoch": epoch}}})
			var r browser.ActionResult
			json.Unmarshal(raw, &r)
			return r, err
		}
		res, err := frameAct(map[string]any{"kind": "click", "ref": ref, "expected": map[string]any{"kind": "text", "text": "Nested clicks: 1"}},
			nested.DocumentEpoch, nested)
		if err != nil || res.Outcome != "succeeded" || res.Postcondition != "passed" || res.Observation == nil || res.Observation.Scope.Kind != "frame" {
			t.Fatalf("click in the frame: %+v %v", res, err)
		}
		note := refOf(t, o, "textbox", "Nested note")
		if res, err := frameAct(map[string]any{"kind": "fill", "ref": note, "text": "typed in a frame",
			"expected": map[string]any{"kind": "text", "text": "typed in a frame"}}, nested.DocumentEpoch, nested); err != nil || res.Outcome != "succeeded" {
			t.Errorf("fill in the frame: %+v %v", res, err)
		}
		if res, err := frameAct(map[string]any{"kind": "press", "ref": ref, "key": "Enter",
			"expected": map[string]any{"kind": "text", "text": "Nested clicks: 2"}}, nested.DocumentEpoch, nested); err != nil || res.Outcome != "succeeded" {
			t.Errorf("Enter on the frame's button: %+v %v", res, err)
		}
		var sameFrame browser.Frame
		for _, f := range inv.Frames {
			if !f.IsMain && f.ParentID == main.ID && f.OriginRelation == "same-origin" && f.ID != nested.ID {
				sameFrame = f
			}
		}
		if res, _ := frameAct(map[string]any{"kind": "click", "ref": ref}, sameFrame.DocumentEpoch, sameFrame); res.Code != wire.CodeStaleTarget {
			t.Errorf("a frame's ref clicked in another frame: %+v", res)
		}
		if res, _ := frameAct(map[string]any{"kind": "click", "ref": ref}, nestedChild.DocumentEpoch, nestedChild); res.Code != wire.CodePolicyDenied || res.Dispatch != "notDispatched" {
			t.Errorf("a click in a cross-origin frame: %+v", res)
		}
		for _, tc := range []struct {
			f     browser.Frame
			epoch string
			code  wire.Code
		}{
			{nestedChild, nestedChild.DocumentEpoch, wire.CodePolicyDenied}, // another origin below the same-origin frame
			{site, "x:y", wire.CodePolicyDenied},                            // another site: out of sight
			{main, main.DocumentEpoch, wire.CodeInvalidRequest},
			{nested, "F:old", wire.CodeStaleTarget},
			{browser.Frame{ID: "frame-unknown"}, "F:L", wire.CodeStaleTarget},
		} {
			if _, err := observeFrame(tc.f, tc.epoch); rpc.CodeOf(err) != tc.code {
				t.Errorf("observe frame %+v: %v, want %s", tc.f, err, tc.code)
			}
		}
	})

	t.Run("viewport", func(t *testing.T) {
		shot, img := capture(t, s, l.ID)
		if shot.Redaction != (browser.Redaction{Policy: "cross-origin-frames", Frames: 6, Regions: 5}) {
			t.Errorf("redaction %+v, want 6 frames in 5 regions (the nested branch is one region)", shot.Redaction)
		}
		width := chromium.Eval[float64](t, s.Browser, target, "document.documentElement.clientWidth")
		if shot.Viewport.Width != width || shot.Viewport.PageY != 0 || img.Bounds().Dx() != int(width) {
			t.Errorf("viewport %+v, image %v, want the page's %v px width at scale 1", shot.Viewport, img.Bounds(), width)
		}
		if c := colorAt(img, 700, 400); c != "green" {
			t.Errorf("page background is %s, want green", c)
		}
		if c := colorAt(img, sameBox.X+75, sameBox.Y+50); c != "blue" {
			t.Errorf("same-origin frame is %s, want blue (not redacted)", c)
		}
		for name, b := range foreignBox {
			if c := allOf(img, b); c != "black" {
				t.Errorf("%s frame: %s, want black all over", name, c)
			}
		}
	})

	t.Run("scrolled", func(t *testing.T) {
		chromium.Eval[any](t, s.Browser, target, "scrollTo(0, 1900)")
		shot, img := capture(t, s, l.ID)
		if shot.Viewport.PageY != 1900 {
			t.Fatalf("viewport %+v after scrolling to 1900", shot.Viewport)
		}
		// Only the frame at y=2000 is in view now, at y=100.
		if shot.Redaction.Regions != 1 || shot.Redaction.Frames != 1 {
			t.Errorf("redaction %+v, want the one frame below", shot.Redaction)
		}
		if c := allOf(img, box{20, 100, 150, 100}); c != "black" {
			t.Errorf("the frame below is %s in view, want black", c)
		}
		if c := colorAt(img, 400, 300); c != "green" {
			t.Errorf("page background is %s, want green", c)
		}
	})

	t.Run("xhtml", func(t *testing.T) {
		// XML documents name their elements in lower case.
		tab, _ := s.Tab(t, s.Pages.URL("/xhtml"))
		lx := s.Claim(t, "s", tab)
		shot, img := capture(t, s, lx.ID)
		if shot.Redaction.Regions != 1 {
			t.Errorf("redaction %+v, want the other site's frame", shot.Redaction)
		}
		if c := allOf(img, box{20, 60, 150, 100}); c != "black" {
			t.Errorf("the other site's frame in an XHTML page: %s, want black", c)
		}
	})

	t.Run("paint effects", func(t *testing.T) {
		tab, target := s.Tab(t, s.Pages.URL("/effects"))
		lx := s.Claim(t, "s", tab)
		// The blur smears the frame's pixels up to 3 radii beyond its box:
		// the region grows by as much.
		shot, img := capture(t, s, lx.ID)
		if shot.Redaction.Regions != 1 {
			t.Fatalf("redaction %+v", shot.Redaction)
		}
		if c := allOf(img, box{40 - 16, 40 - 16, 150 + 32, 100 + 32}); c != "black" {
			t.Errorf("the blurred frame and its blur: %s, want black", c)
		}
		// A reflection can put the frame's pixels anywhere: no image.
		chromium.Eval[any](t, s.Browser, target, "document.getElementById('blurred').style.webkitBoxReflect = 'right 10px'")
		if _, err := s.Call(t, "browser.capture", map[string]any{"sessionId": "s", "leaseId": lx.ID}); rpc.CodeOf(err) != wire.CodeUnsupportedCapability {
			t.Errorf("capture of a reflected foreign frame: %v, want UNSUPPORTED_CAPABILITY", err)
		}
	})

	t.Run("hidden tab", func(t *testing.T) {
		s.Browser.OpenTab(t, s.Pages.URL("/counter")) // now in front of the leased tab
		start := time.Now()
		_, err := s.Call(t, "browser.capture", map[string]any{"sessionId": "s", "leaseId": l.ID})
		if rpc.CodeOf(err) != wire.CodeNotActionable {
			t.Fatalf("capture of a background tab: %v, want NOT_ACTIONABLE", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the refusal took %v: Chromium never answers a screenshot of a hidden tab, the extension must not ask", d)
		}
		// Nor a query (queryAXTree): the extension walks the tree instead.
		start = time.Now()
		raw, err := s.Call(t, "browser.observe", map[string]any{"sessionId": "s", "leaseId": l.ID, "query": map[string]any{"name": "Frames", "role": "heading"}})
		var o browser.Observation
		json.Unmarshal(raw, &o)
		if err != nil || len(o.Nodes) != 1 || o.Nodes[0].Name != "Frames" {
			t.Errorf("query on a hidden tab: %s %v", raw, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the query on a hidden tab took %v", d)
		}
	})

	t.Run("after release", func(t *testing.T) {
		params := map[string]any{"sessionId": "s", "leaseId": l.ID}
		if raw, err := s.Call(t, "browser.validateLease", params); err != nil || string(raw) != `{"valid":true}` {
			t.Fatalf("validateLease: %s %v", raw, err)
		}
		if _, err := s.Call(t, "browser.release", params); err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"browser.capture", "browser.frames", "browser.validateLease"} {
			if raw, err := s.Call(t, m, params); rpc.CodeOf(err) != wire.CodeLeaseRevoked {
				t.Errorf("%s after release: %s %v, want LEASE_REVOKED", m, raw, err)
			}
		}
	})
}

func frameList(t *testing.T, s *stack.Stack, leaseID string) browser.FrameInventory {
	t.Helper()
	raw, err := s.Call(t, "browser.frames", map[string]any{"sessionId": "s", "leaseId": leaseID})
	if err != nil {
		t.Fatalf("browser.frames: %v", err)
	}
	var inv browser.FrameInventory
	if err := json.Unmarshal(raw, &inv); err != nil {
		t.Fatal(err)
	}
	return inv
}

func capture(t *testing.T, s *stack.Stack, leaseID string) (browser.Screenshot, image.Image) {
	t.Helper()
	raw, err := s.Call(t, "browser.capture", map[string]any{"sessionId": "s", "leaseId": leaseID})
	if err != nil {
		t.Fatalf("browser.capture: %v\nbroker:\n%s", err, s.B.Stderr)
	}
	var shot browser.Screenshot
	if err := json.Unmarshal(raw, &shot); err != nil {
		t.Fatal(err)
	}
	data, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || shot.MimeType != "image/jpeg" {
		t.Fatalf("screenshot %s, base64: %v", shot.MimeType, err)
	}
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a JPEG: %v", err)
	}
	return shot, img
}

// colorAt names the color at viewport point (x, y): green, blue, black or
// other (JPEG shifts colors a little).
func colorAt(img image.Image, x, y float64) string {
	r, g, b, _ := img.At(int(x), int(y)).RGBA()
	r, g, b = r>>8, g>>8, b>>8
	switch {
	case r < 40 && g < 40 && b < 40:
		return "black"
	case b > 180 && r < 80 && g < 80:
		return "blue"
	case g > 150 && r < 80 && b < 80:
		return "green"
	}
	return fmt.Sprintf("other (%d,%d,%d)", r, g, b)
}

// allOf samples a grid inside b (3 px in from its edges) and returns the one
// color found there, or a description of the first point that differs.
func allOf(img image.Image, b box) string {
	first := colorAt(img, b.X+3, b.Y+3)
	for x := b.X + 3; x <= b.X+b.W-3; x += 7 {
		for y := b.Y + 3; y <= b.Y+b.H-3; y += 7 {
			if c := colorAt(img, x, y); c != first {
				return fmt.Sprintf("%s at (%v,%v) but %s at (%v,%v)", first, b.X+3, b.Y+3, c, x, y)
			}
		}
	}
	return first
}

// TestE2ECaptureMovingFrames: frames of another origin that move all the
// time, by layout and on the compositor. A capture either fails STALE_TARGET
// or shows none of their pixels.
func TestE2ECaptureMovingFrames(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	tab, _ := s.Tab(t, s.Pages.URL("/moving"))
	l := s.Claim(t, "s", tab)
	images, stale := 0, 0
	for range 6 {
		raw, err := s.Call(t, "browser.capture", map[string]any{"sessionId": "s", "leaseId": l.ID})
		if rpc.CodeOf(err) == wire.CodeStaleTarget {
			stale++
			continue
		}
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		images++
		var shot browser.Screenshot
		json.Unmarshal(raw, &shot)
		data, _ := base64.StdEncoding.DecodeString(shot.Data)
		img, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		b := img.Bounds()
		for x := 0; x < b.Dx(); x += 2 {
			for y := 0; y < b.Dy(); y += 2 {
				if c := colorAt(img, float64(x), float64(y)); c == "blue" {
					t.Fatalf("a moving frame's pixel at (%d,%d) is in the image (redaction %+v)", x, y, shot.Redaction)
				}
			}
		}
	}
	t.Logf("%d images without foreign pixels, %d STALE_TARGET", images, stale)
}
