package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// devtools is the harness's own DevTools connection, on which Evaluate
// runs JavaScript in flat sessions that never enable a domain.
//
// Evaluating through a chromedp context is not safe under -race: attaching
// one to a page (Context.newTarget in chromedp v0.23.0) fills the frame's
// node map (Target.documentUpdated) on the caller's goroutine while the
// target's run loop, already started, reads that map without the frame's
// lock for every DOM event (Target.domEvent). A page that changes its DOM
// during the attach (an app rendering) is a data race. This connection
// keeps no DOM, so it has nothing to race on.
type devtools struct {
	conn *remote.Conn
	done chan struct{} // closed when the reader has ended

	attachMu sync.Mutex // held while one target is looked up and attached

	mu       sync.Mutex // guards the fields below
	err      error      // why the reader ended
	next     int64
	replies  map[int64]pending
	sessions map[target.ID]target.SessionID // attached once, kept until detached
}

// pending is a call waiting for its answer, in session sid.
type pending struct {
	ch  chan *cdproto.Message // buffered
	sid target.SessionID
}

func dialDevtools(ctx context.Context, wsURL string) (*devtools, error) {
	conn, err := remote.DialContext(ctx, wsURL)
	if err != nil {
		return nil, err
	}
	d := &devtools{
		conn:     conn,
		done:     make(chan struct{}),
		replies:  map[int64]pending{},
		sessions: map[target.ID]target.SessionID{},
	}
	go d.read()
	return d, nil
}

// read hands each reply to its caller and forgets the sessions that end,
// until the connection does. A call in a session that ends is answered
// with an error: a page that closes (a window's button that answers and
// closes it) never answers what it was doing.
func (d *devtools) read() {
	defer close(d.done)
	for {
		msg := new(cdproto.Message)
		if err := d.conn.Read(context.Background(), msg); err != nil {
			d.mu.Lock()
			d.err = err
			d.mu.Unlock()
			return
		}
		switch {
		case msg.ID != 0:
			d.mu.Lock()
			p, ok := d.replies[msg.ID]
			delete(d.replies, msg.ID)
			d.mu.Unlock()
			if ok {
				p.ch <- msg
			}
		case string(msg.Method) == target.DetachedFromTarget.Method:
			var ev target.EventDetachedFromTarget
			if jsonv2.Unmarshal(msg.Params, &ev, chromedp.DefaultUnmarshalOptions) == nil {
				d.mu.Lock()
				for id, sid := range d.sessions {
					if sid == ev.SessionID {
						delete(d.sessions, id)
					}
				}
				for id, p := range d.replies {
					if p.sid == ev.SessionID {
						delete(d.replies, id)
						p.ch <- &cdproto.Message{ID: id, Error: &cdproto.Error{Code: -32001, Message: "the target closed"}}
					}
				}
				d.mu.Unlock()
			}
		}
	}
}

// close closes the connection, which detaches its sessions.
func (d *devtools) close() {
	d.conn.Close()
	<-d.done
}

// call sends cmd in session sid ("" for the browser) and waits for its
// answer.
func call[P, R any](ctx context.Context, d *devtools, sid target.SessionID, cmd cdp.Command[P, R], params P) (R, error) {
	var res R
	buf, err := jsonv2.Marshal(params, chromedp.DefaultMarshalOptions)
	if err != nil {
		return res, err
	}
	ch := make(chan *cdproto.Message, 1)
	d.mu.Lock()
	d.next++
	id := d.next
	d.replies[id] = pending{ch, sid}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.replies, id)
		d.mu.Unlock()
	}()
	if err := d.conn.Write(ctx, &cdproto.Message{ID: id, SessionID: sid, Method: cdproto.MethodType(cmd.Method), Params: buf}); err != nil {
		return res, err
	}
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-d.done:
		d.mu.Lock()
		defer d.mu.Unlock()
		return res, fmt.Errorf("the DevTools connection ended: %w", d.err)
	case msg := <-ch:
		if msg.Error != nil {
			return res, msg.Error
		}
		return res, jsonv2.Unmarshal(msg.Result, &res, chromedp.DefaultUnmarshalOptions)
	}
}

// attach attaches a new session to target id. detach ends it.
func (d *devtools) attach(ctx context.Context, id target.ID) (target.SessionID, error) {
	res, err := call(ctx, d, "", target.AttachToTarget, target.AttachToTargetParams{TargetID: id, Flatten: new(true)})
	return res.SessionID, err
}

func (d *devtools) detach(ctx context.Context, sid target.SessionID) error {
	_, err := call(ctx, d, "", target.DetachFromTarget, target.DetachFromTargetParams{SessionID: sid})
	return err
}

// session returns the session on target id, attaching on first use. Like
// the helpers' chromedp sessions it stays until the browser closes, so a
// service worker once evaluated in is kept alive.
func (d *devtools) session(ctx context.Context, id target.ID) (target.SessionID, error) {
	d.attachMu.Lock()
	defer d.attachMu.Unlock()
	d.mu.Lock()
	sid, ok := d.sessions[id]
	d.mu.Unlock()
	if ok {
		return sid, nil
	}
	sid, err := d.attach(ctx, id)
	if err != nil {
		return "", err
	}
	d.mu.Lock()
	d.sessions[id] = sid
	d.mu.Unlock()
	return sid, nil
}

// evaluate evaluates expr in session sid, awaits it if it is a promise, and
// returns its value.
func (d *devtools) evaluate(ctx context.Context, sid target.SessionID, expr string) (*runtime.RemoteObject, error) {
	res, err := call(ctx, d, sid, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr,
		ReturnByValue: new(true),
		AwaitPromise:  new(true),
	})
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, &chromedp.ExceptionError{ExceptionDetails: res.ExceptionDetails}
	}
	return res.Result, nil
}

// Evaluate evaluates the JavaScript expression in target id as Eval does,
// bounded by ctx, and returns the error instead of failing the test: for
// polls of a target that can go away meanwhile (a frame being replaced).
// It is safe to call from several goroutines.
func Evaluate[T any](ctx context.Context, b *Browser, id target.ID, expr string) (T, error) {
	var zero T
	sid, err := b.devtools.session(ctx, id)
	if err != nil {
		return zero, fmt.Errorf("attach: %w", err)
	}
	v, err := b.devtools.evaluate(ctx, sid, expr)
	if err != nil {
		return zero, err
	}
	return decode[T](v)
}

// decode turns a value returned by value into T, as chromedp.Evaluate does:
// undefined and null become the zero value of a T that can be nil, and an
// error for any other T.
func decode[T any](v *runtime.RemoteObject) (T, error) {
	var res T
	value := []byte(v.Value)
	if len(value) == 0 || string(value) == "null" {
		switch reflect.TypeFor[T]().Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			value = []byte("null")
		default:
			if v.Type == "undefined" {
				return res, chromedp.ErrJSUndefined
			}
			return res, chromedp.ErrJSNull
		}
	}
	if err := json.Unmarshal(value, &res); err != nil {
		return res, fmt.Errorf("decode %s: %w", value, err)
	}
	return res, nil
}
