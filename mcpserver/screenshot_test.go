package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/jpeg"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/browser"
)

// jpegData is a base64 JPEG of w×h pixels, as browser.capture sends it.
func jpegData(t *testing.T, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h)), &jpeg.Options{Quality: 70}); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestScreenshotResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		sh   browser.Screenshot
		want []string
	}{
		{"wide, redacted", browser.Screenshot{
			Tab: "inst:7", DocumentEpoch: "F:L", CapturedAt: 1789207200000, MimeType: "image/jpeg", Data: jpegData(t, 1200, 675),
			Viewport:  browser.Viewport{Width: 1280, Height: 720, PageX: 0, PageY: 240.5},
			Redaction: browser.Redaction{Policy: "cross-origin-frames", Frames: 3, Regions: 2},
		}, []string{
			"screenshot of tab=inst:7 leaseId=L1 documentEpoch=F:L\n",
			"captured 2026-09-12T10:00:00Z; image 1200×675 px of the viewport 1280×720 at pageX=0,pageY=240.5 (scale 0.9375)\n",
			"redaction: 3 cross-origin frames painted black in 2 regions (their content is not shown; browser_frames lists them)\n",
			"For looking only: to click or type, use refs from browser_observe, not coordinates in this image.\n",
		}},
		{"narrow, one frame", browser.Screenshot{
			Tab: "inst:7", DocumentEpoch: "F:L", CapturedAt: 1789207200000, MimeType: "image/jpeg", Data: jpegData(t, 800, 600),
			Viewport:  browser.Viewport{Width: 800, Height: 600, PageX: 12.345, PageY: 0},
			Redaction: browser.Redaction{Policy: "cross-origin-frames", Frames: 1, Regions: 1},
		}, []string{
			"image 800×600 px of the viewport 800×600 at pageX=12.35,pageY=0 (scale 1)\n",
			"redaction: 1 cross-origin frame painted black in 1 region ",
		}},
		{"nothing redacted", browser.Screenshot{
			MimeType: "image/jpeg", Data: jpegData(t, 1200, 900), Viewport: browser.Viewport{Width: 1366, Height: 1024},
			Redaction: browser.Redaction{Policy: "cross-origin-frames"},
		}, []string{
			"(scale 0.8785)\n",
			"redaction: no frames redacted\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ScreenshotResult(&tc.sh, "L1")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 2 || res.IsError {
				t.Fatalf("content %v, isError %v", res.Content, res.IsError)
			}
			img, ok := res.Content[0].(*mcp.ImageContent)
			if !ok || img.MIMEType != "image/jpeg" || base64.StdEncoding.EncodeToString(img.Data) != tc.sh.Data {
				t.Errorf("image content %T %q: not the decoded JPEG", res.Content[0], img.MIMEType)
			}
			text := res.Content[1].(*mcp.TextContent).Text
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestScreenshotResultRefuses(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n"))
	for name, sh := range map[string]browser.Screenshot{
		"another type":   {MimeType: "image/png", Data: jpegData(t, 10, 10)},
		"not base64":     {MimeType: "image/jpeg", Data: "not base64!"},
		"not a JPEG":     {MimeType: "image/jpeg", Data: png},
		"no data at all": {MimeType: "image/jpeg"},
	} {
		if _, err := ScreenshotResult(&sh, "L"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestCaptureRevoked: forgetting a lease revokes its captures not yet
// returned, and only those.
func TestCaptureRevoked(t *testing.T) {
	se := &session{pages: make(map[string]*pageInfo), captures: make(map[string]map[*pendingCapture]bool)}
	ctx1, done1 := se.holdCapture(t.Context(), "L1")
	ctx2, done2 := se.holdCapture(t.Context(), "L2")
	defer done2()
	se.forget("L1")
	if !errors.Is(context.Cause(ctx1), errCaptureRevoked) {
		t.Errorf("L1's capture: cause %v", context.Cause(ctx1))
	}
	if ctx2.Err() != nil {
		t.Errorf("L2's capture was revoked too: %v", context.Cause(ctx2))
	}
	done1()
	if len(se.captures) != 1 {
		t.Errorf("captures held: %v", se.captures)
	}
	done2()
	if len(se.captures) != 0 || !errors.Is(ctx2.Err(), context.Canceled) || errors.Is(context.Cause(ctx2), errCaptureRevoked) {
		t.Errorf("after done: %v, cause %v", se.captures, context.Cause(ctx2))
	}
}
