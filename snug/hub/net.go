package hub

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/fetch"
	"github.com/dsh-browser/broker/snug/frame"
)

// confirmTimeout bounds how long a question waits on the user: past it,
// the answer is no.
const confirmTimeout = 2 * time.Minute

// serveNet runs a net-request through the executor, bound to the runner's
// app (never to anything the frame says), asking the user in this tab's
// host chrome before a mutating request.
func (r *runner) serveNet(p *frame.Pending, f *frame.NetRequest) {
	defer p.Close()
	ctx := p.Context()
	resp, ferr := r.h.net.Do(ctx, r.appID, fetch.Request{URL: f.URL, Method: f.Method, Headers: f.Headers, Body: f.Body},
		func(ctx context.Context, c fetch.Confirm) bool {
			res, ok := r.ask(ctx, apps.ConfirmParams{Kind: apps.ConfirmNet, Host: c.Host, Method: c.Method, URL: c.URL, Body: c.Body, Slot: c.Slot})
			return ok && res.Allowed
		})
	if ferr != nil {
		// The code is logged, never the URL (it may be the user's private
		// host on the snug-connection:// path) nor anything injected.
		r.h.log.Debug("app net request refused", "app", r.appID, "code", ferr.Code)
		p.Fail(frame.ResponseError{Code: ferr.Code, Message: ferr.Message, Retryable: ferr.Retryable})
		return
	}
	p.Respond(&frame.NetResponse{OK: true, Status: resp.Status, Headers: resp.Headers, Body: resp.Body})
}

// serveOpenURL shows the full URL in this tab's host chrome; the page
// opens it in a new tab of the user's browser on their click (a user
// gesture), and the sandbox gains nothing.
func (r *runner) serveOpenURL(p *frame.Pending, f *frame.OpenURLRequest) {
	defer p.Close()
	res, ok := r.ask(p.Context(), apps.ConfirmParams{Kind: apps.ConfirmOpenURL, URL: f.URL})
	switch {
	case !ok:
		p.Respond(&frame.OpenURLResult{Status: frame.OpenURLRefused, Reason: "the host could not ask the user"})
	case res.Status == string(frame.OpenURLOpened):
		p.Respond(&frame.OpenURLResult{Status: frame.OpenURLOpened})
	default:
		p.Respond(&frame.OpenURLResult{Status: frame.OpenURLDeclined})
	}
}

// ask puts a question to the owner in this runner's tab. ok is false when
// nobody could be asked: the provider is not the owner's own software (it
// may serve apps, but is never asked), or the tab did not answer in time.
// The app never sees the question, and nothing it sends can answer it.
func (r *runner) ask(ctx context.Context, q apps.ConfirmParams) (apps.ConfirmResult, bool) {
	var res apps.ConfirmResult
	if !r.link.p.OwnerSurface() {
		return res, false
	}
	q.Runner = r.id
	q.App = r.snapshot().DisplayName
	if a, _, err := r.h.db.OpenApp(ctx, r.appID); err == nil {
		q.App = a.DisplayName // the installed name, not what the app announced
	}
	ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	raw, err := r.link.p.Call(ctx, apps.CallConfirm, q)
	if err != nil || json.Unmarshal(raw, &res) != nil {
		return res, false
	}
	return res, true
}
