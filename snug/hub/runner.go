package hub

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/appdb"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/contract"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/wire"
)

// inboxSize bounds a runner's frames waiting to be applied; past it a
// frame is dropped (an app flooding its host), and said so in the log.
const inboxSize = 1024

// runner is one app shown in one runner tab.
type runner struct {
	h     *Hub
	link  *link
	id    string
	appID string // the host's identity of the app: its storage and budget

	ctx    context.Context // ends when the runner does
	cancel context.CancelFunc
	inbox  chan inbound
	inst   *frame.Instance

	// Guarded by link.mu.
	queued int   // base64 characters queued for the tab
	outSeq int64 // the last message number sent to the tab
	// Only the provider's reader goroutine touches it (events are serial).
	assembly assembly

	mu      sync.Mutex
	display apps.Display
	terms   *contract.Contract // the version's valid contract, or nil
	db      *appdb.Instance    // the storage seat of the current document
	dropped int                // frames dropped at a full inbox

	chat *chatSession // the chat panel beside the app
}

// inbound is one thing the tab sent, applied in order.
type inbound struct {
	frame []byte
	load  bool
	reset bool
}

// hostReady is what every runner offers: streaming, storage, the governed
// network and host-mediated open-url, each with its handler wired.
var hostReady = frame.HostReady{Capabilities: frame.Capabilities{Streaming: true, DB: true, Net: true, OpenURL: true},
	Theme: frame.ThemeLight}

// attach serves apps.ProviderAttach: a runner tab of this provider wants
// to show an app. The app is named by its id only: the runner was opened
// for that app by the broker.
func (h *Hub) attach(ctx context.Context, p service.Provider, params json.RawMessage) (any, error) {
	var ap apps.AttachParams
	if err := json.Unmarshal(params, &ap); err != nil || !runnerID.MatchString(ap.Runner) || ap.App == "" {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	l := h.link(p)
	if l == nil {
		return nil, wire.Err(wire.CodeConnectionLost)
	}
	db, err := h.store()
	if err != nil {
		return nil, err
	}
	a, _, err := db.OpenApp(ctx, ap.App)
	if err != nil {
		return nil, fromDB(err)
	}
	rctx, cancel := context.WithCancel(context.Background()) // the runner outlives the request
	r := &runner{h: h, link: l, id: ap.Runner, appID: a.ID, ctx: rctx, cancel: cancel, inbox: make(chan inbound, inboxSize)}
	r.chat = newChatSession(r)
	r.inst, err = frame.NewInstance(hostReady, func(b []byte) { l.enqueue(r, apps.PieceFrame, b) })
	if err != nil {
		cancel()
		return nil, err
	}
	old, ok := l.add(r)
	if !ok {
		cancel()
		return nil, wire.Err(wire.CodeQueueFull)
	}
	if old != nil {
		l.remove(old)
	}
	if err := r.reload(ctx); err != nil {
		l.remove(r)
		return nil, err
	}
	go r.serve()
	go r.chat.run()
	h.log.Info("runner opened", "app", a.ID, "instance", p.InstanceID())
	return h.appInfo(a), nil
}

// reload sends the app's current version to the tab, which loads it in a
// fresh document (and then reports the load, EventLoad).
func (r *runner) reload(ctx context.Context) error {
	a, _, err := r.h.db.OpenApp(ctx, r.appID)
	if err != nil {
		return fromDB(err)
	}
	src, err := r.h.db.Source(ctx, r.appID, 0)
	if err != nil {
		return fromDB(err)
	}
	r.mu.Lock()
	r.terms = contract.Read(src.RuntimeContract)
	r.display = apps.Display{ID: a.ID, Version: src.Version, DisplayName: a.DisplayName, Description: a.Description,
		IconEmoji: a.IconEmoji, IconColor: a.IconColor}
	r.mu.Unlock()
	r.showDisplay()
	r.link.enqueue(r, apps.PieceHTML, []byte(src.HTML))
	return nil
}

// showDisplay sends the host chrome what it shows of the app.
func (r *runner) showDisplay() {
	r.mu.Lock()
	d := r.display
	r.mu.Unlock()
	d.Agent = r.h.agentReady()
	d.AgentBlocked = r.h.budget(r.appID).Exhausted()
	if c, err := r.h.readAgent(context.Background()); err == nil {
		d.AgentUnconfirmed = c.unconfirmed && c.provider != apps.AgentNone
	}
	data, _ := json.Marshal(d)
	r.link.enqueue(r, apps.PieceApp, data)
}

func (r *runner) snapshot() apps.Display {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.display
}

// post queues something the tab sent; a full inbox drops it.
func (r *runner) post(in inbound) {
	select {
	case r.inbox <- in:
	case <-r.ctx.Done():
	default:
		r.mu.Lock()
		r.dropped++
		n := r.dropped
		r.mu.Unlock()
		if n == 1 || n%1000 == 0 {
			r.h.log.Warn("dropped frames from an app flooding its host", "app", r.appID, "dropped", n)
		}
	}
}

// stop ends the runner: its requests in flight end SUPERSEDED.
func (r *runner) stop() {
	r.cancel()
	r.inst.Close()
}

// serve applies what the tab sent, in order.
func (r *runner) serve() {
	for {
		select {
		case <-r.ctx.Done():
			return
		case in := <-r.inbox:
			switch {
			case in.load:
				r.mu.Lock()
				r.db = appdb.NewInstance(r.h.db, r.appID)
				r.mu.Unlock()
				r.inst.Load()
			case in.reset:
				r.h.budget(r.appID).Reset()
				r.showDisplay()
			default:
				r.receive(in.frame)
			}
		}
	}
}

// receive applies the frame rules to one frame and starts the work of an
// accepted request; every answer the rules require is sent by the
// Instance.
func (r *runner) receive(raw []byte) {
	in, err := r.inst.Receive(r.ctx, raw)
	if err != nil {
		// Refusals the app brought on itself in bulk (a flood, stale or
		// duplicate ids) are answered, not logged.
		if !errors.Is(err, frame.ErrIgnored) && !errors.Is(err, frame.ErrStale) && !errors.Is(err, frame.ErrBusy) && !errors.Is(err, frame.ErrDuplicate) {
			r.h.log.Debug("app frame refused", "app", r.appID, "err", err)
		}
		return
	}
	switch f := in.Frame.(type) {
	case *frame.AppAnnounce:
		r.mu.Lock()
		r.display.DisplayName, r.display.Description = f.DisplayName, f.Description
		r.display.IconEmoji, r.display.IconColor, r.display.Announced = f.IconEmoji, f.IconColor, true
		r.mu.Unlock()
		r.showDisplay()
	case *frame.DBRequest:
		r.mu.Lock()
		seat := r.db
		r.mu.Unlock()
		go serveDB(seat, in.Request, f)
	case *frame.AppMessage:
		go r.turn(in.Request, f)
	case *frame.NetRequest:
		go r.serveNet(in.Request, f)
	case *frame.OpenURLRequest:
		go r.serveOpenURL(in.Request, f)
	}
}

// serveDB runs a db-request on the app's own storage seat.
func serveDB(seat *appdb.Instance, p *frame.Pending, f *frame.DBRequest) {
	defer p.Close()
	if seat == nil { // a frame before the first load: no document to serve
		p.Fail(frame.ResponseError{Code: frame.CodeHostError, Message: "the app document has not loaded"})
		return
	}
	req := appdb.Request{V: frame.ProtocolVersion, Type: appdb.RequestType, RequestID: f.RequestID, InstanceID: f.InstanceID,
		Op: string(f.Op), SQL: f.SQL, BytesBase64: f.BytesBase64, Key: f.Key, Value: f.Value}
	if f.Params != nil && json.Unmarshal(f.Params, &req.Params) != nil {
		p.Fail(frame.ResponseError{Code: frame.CodeHostError, Message: "params must be an array"})
		return
	}
	resp := seat.Handle(p.Context(), req)
	out := &frame.DBResponse{OK: resp.OK, Columns: resp.Columns, Value: resp.Value, BytesBase64: resp.BytesBase64}
	if resp.Error != nil {
		out.Error = &frame.ResponseError{Code: resp.Error.Code, Message: resp.Error.Message, Retryable: resp.Error.Retryable}
	} else if resp.Rows != nil || resp.Columns != nil {
		rows := resp.Rows
		if rows == nil {
			rows = [][]any{}
		}
		data, err := json.Marshal(rows)
		if err != nil {
			p.Fail(frame.ResponseError{Code: frame.CodeHostError, Message: "the result cannot be encoded"})
			return
		}
		out.Rows = data
	}
	p.Respond(out)
}
