package runtime

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// Screenshot limits.
const (
	redactionPolicy = "cross-origin-frames"
	jpegMime        = "image/jpeg"
)

// Capture takes a screenshot of the leased tab's viewport. Redaction happens
// in the extension, before transfer; the broker checks what it receives is a
// JPEG of the leased document with a coherent redaction record.
func (r *Runtime) Capture(ctx context.Context, c Client, params json.RawMessage) (any, error) {
	return r.onPage(ctx, c, params, browser.CapCapture, func(ctx context.Context, l *lease.Lease, p *page, prov Provider) (any, error) {
		src, err := callCapture(ctx, prov, l)
		if err != nil {
			return nil, err
		}
		if err := r.checkOrigin(l, src.URL); err != nil {
			return nil, err
		}
		if len(src.Data) > browser.MaxScreenshotData {
			return nil, wire.Err(wire.CodeQueueFull)
		}
		if err := src.check(); err != nil {
			return nil, providerErr(browser.ProviderCapture, err)
		}
		p.observed(src.DocumentEpoch, src.URL)
		return &browser.Screenshot{
			Tab: l.Tab, DocumentEpoch: src.DocumentEpoch, CapturedAt: src.CapturedAt, MimeType: src.MimeType,
			Data: src.Data, Viewport: src.Viewport, Redaction: src.Redaction,
		}, nil
	})
}

func (s *sourceScreenshot) check() error {
	img, err := base64.StdEncoding.DecodeString(s.Data)
	switch {
	case !epochOK(s.DocumentEpoch) || s.CapturedAt <= 0:
		return errors.New("no document or time")
	case s.MimeType != jpegMime || err != nil || !bytes.HasPrefix(img, []byte{0xFF, 0xD8, 0xFF}):
		return errors.New("not a base64 JPEG")
	case !(s.Viewport.Width > 0 && s.Viewport.Height > 0):
		return errors.New("empty viewport")
	case s.Redaction.Policy != redactionPolicy || s.Redaction.Regions < 0 || s.Redaction.Regions > s.Redaction.Frames:
		return errors.New("incoherent redaction record")
	}
	return nil
}

// ValidateLease answers {valid:true} while the caller's lease is live on a
// connected browser, else LEASE_REVOKED. It reads nothing and renews nothing:
// a client calls it after a capture, before publishing the image.
func (r *Runtime) ValidateLease(_ context.Context, c Client, params json.RawMessage) (any, error) {
	var in browser.LeaseParams
	if err := decodeParams(params, &in); err != nil {
		return nil, err
	}
	if !bounded(in.SessionID, 1, 256) || !bounded(in.LeaseID, 1, 256) {
		return nil, invalid()
	}
	if _, _, _, err := r.leased(lease.Owner{Conn: c.ConnID(), Session: in.SessionID}, in.LeaseID); err != nil {
		if rpc.CodeOf(err) == wire.CodeConnectionLost {
			return nil, wire.Err(wire.CodeLeaseRevoked)
		}
		return nil, err
	}
	return map[string]bool{"valid": true}, nil
}
