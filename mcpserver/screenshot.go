package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image/jpeg"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/browser"
)

// maxImageWidth is the widest image the extension sends: it scales the
// viewport by min(1, maxImageWidth/width).
const maxImageWidth = 1200

// ScreenshotResult builds browser_screenshot's result from browser.capture's
// value: the image, then a caption with the document, the viewport, the
// image's scale and what was painted over:
//
//	screenshot of tab=inst:7 leaseId=L1 documentEpoch=F…:L…
//	captured 2026-09-12T10:00:00Z; image 1200×675 px of the viewport 1280×720 at pageX=0,pageY=240 (scale 0.9375)
//	redaction: no frames redacted
//	For looking only: to click or type, use refs from browser_observe, not coordinates in this image.
//
// It fails when the value is not a JPEG image.
func ScreenshotResult(sh *browser.Screenshot, leaseID string) (*mcp.CallToolResult, error) {
	if sh.MimeType != "image/jpeg" {
		return nil, fmt.Errorf("screenshot of type %q, want image/jpeg", sh.MimeType)
	}
	data, err := base64.StdEncoding.DecodeString(sh.Data)
	if err != nil {
		return nil, fmt.Errorf("screenshot data: %v", err)
	}
	img, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("screenshot data: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "screenshot of tab=%s leaseId=%s documentEpoch=%s\n", sh.Tab, leaseID, sh.DocumentEpoch)
	vp := sh.Viewport
	fmt.Fprintf(&b, "captured %s; image %d×%d px of the viewport %s×%s at pageX=%s,pageY=%s (scale %s)\n",
		time.UnixMilli(sh.CapturedAt).UTC().Format(time.RFC3339), img.Width, img.Height,
		num(vp.Width), num(vp.Height), num(vp.PageX), num(vp.PageY), strconv.FormatFloat(imageScale(vp.Width), 'g', 4, 64))
	b.WriteString("redaction: ")
	if r := sh.Redaction; r.Frames == 0 {
		b.WriteString("no frames redacted\n")
	} else {
		fmt.Fprintf(&b, "%s painted black in %s (their content is not shown; browser_frames lists them)\n",
			plural(r.Frames, "cross-origin frame", "cross-origin frames"), plural(r.Regions, "region", "regions"))
	}
	b.WriteString("For looking only: to click or type, use refs from browser_observe, not coordinates in this image.\n")
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.ImageContent{Data: data, MIMEType: "image/jpeg"},
		&mcp.TextContent{Text: b.String()},
	}}, nil
}

// imageScale is the image's size over the viewport's.
func imageScale(width float64) float64 {
	if width <= maxImageWidth {
		return 1
	}
	return maxImageWidth / width
}

// num formats a CSS length with at most two decimals.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// errCaptureRevoked cancels a capture whose lease was handed off or ended
// before its image was returned.
var errCaptureRevoked = errors.New("the capture's lease ended")

// pendingCapture is a screenshot taken and not yet returned.
type pendingCapture struct {
	cancel context.CancelCauseFunc
}

// holdCapture registers a capture for leaseID and returns its context,
// cancelled with errCaptureRevoked when the lease is forgotten, and the
// function that ends it.
func (se *session) holdCapture(ctx context.Context, leaseID string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	pc := &pendingCapture{cancel: cancel}
	se.mu.Lock()
	if se.captures[leaseID] == nil {
		se.captures[leaseID] = make(map[*pendingCapture]bool)
	}
	se.captures[leaseID][pc] = true
	se.mu.Unlock()
	return ctx, func() {
		se.mu.Lock()
		delete(se.captures[leaseID], pc)
		if len(se.captures[leaseID]) == 0 {
			delete(se.captures, leaseID)
		}
		se.mu.Unlock()
		cancel(nil)
	}
}

// forget drops what the session knows of a lease and revokes its captures
// not yet returned. It does not block.
func (se *session) forget(leaseID string) {
	se.mu.Lock()
	defer se.mu.Unlock()
	delete(se.pages, leaseID)
	for pc := range se.captures[leaseID] {
		pc.cancel(errCaptureRevoked)
	}
	delete(se.captures, leaseID)
}
