package hub

import (
	"context"
	"encoding/base64"
	"regexp"
	"sync"
	"time"

	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/apps"
)

// maxQueuedChars bounds the base64 queued for one runner: eight db answers
// of the largest class and their streaming neighbours. A runner past it is
// dropped: its tab stopped taking what it asked for. (A variable: a test
// lowers it.)
var maxQueuedChars = 96 << 20

// deliverTimeout bounds one deliver call.
const deliverTimeout = 30 * time.Second

var runnerID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// link is the hub's side of one snug provider: its runners, the pieces
// being reassembled from it, and the ordered queue of pieces to it.
type link struct {
	h *Hub
	p service.Provider

	mu      sync.Mutex
	runners map[string]*runner
	queue   []queued
	wake    chan struct{} // cap 1: the queue grew
	done    chan struct{} // closed by close
	closed  bool
}

type queued struct {
	r     *runner
	piece apps.Piece
}

func newLink(h *Hub, p service.Provider) *link {
	return &link{h: h, p: p, runners: make(map[string]*runner), wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (l *link) list() []*runner {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*runner, 0, len(l.runners))
	for _, r := range l.runners {
		out = append(out, r)
	}
	return out
}

func (l *link) runner(id string) *runner {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runners[id]
}

// add registers a new runner, replacing one of the same id; it fails past
// apps.MaxRunners.
func (l *link) add(r *runner) (old *runner, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false
	}
	old = l.runners[r.id]
	if old == nil && len(l.runners) >= apps.MaxRunners {
		return nil, false
	}
	l.runners[r.id] = r
	return old, true
}

// remove forgets a runner and the pieces still queued for it.
func (l *link) remove(r *runner) {
	l.mu.Lock()
	if l.runners[r.id] == r {
		delete(l.runners, r.id)
	}
	kept := l.queue[:0]
	for _, q := range l.queue {
		if q.r != r {
			kept = append(kept, q)
		}
	}
	clear(l.queue[len(kept):])
	l.queue = kept
	l.mu.Unlock()
	r.stop()
}

// drop ends a runner and tells its tab why.
func (l *link) drop(r *runner, reason string) {
	l.remove(r)
	l.enqueueFor(r.id, nil, apps.PieceClosed, []byte(reason))
}

func (l *link) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	runners := l.runners
	l.runners = map[string]*runner{}
	l.queue = nil
	close(l.done)
	l.mu.Unlock()
	for _, r := range runners {
		r.stop()
	}
}

// enqueue queues one message for a runner's tab, cut into pieces. It never
// blocks (frame.Instance calls it with its lock held). A runner whose
// queue is past its bound is dropped.
func (l *link) enqueue(r *runner, kind string, data []byte) {
	if !l.enqueueFor(r.id, r, kind, data) {
		l.h.log.Warn("dropped a runner whose tab stopped taking its frames", "app", r.appID)
		go l.drop(r, "The app sent more than its tab could take.")
	}
}

func (l *link) enqueueFor(id string, r *runner, kind string, data []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || (r != nil && l.runners[id] != r) {
		return true // gone: nothing to send
	}
	if r != nil {
		size := base64.StdEncoding.EncodedLen(len(data))
		if r.queued+size > maxQueuedChars {
			return false
		}
		r.queued += size
	}
	seq := l.nextSeq(r)
	for part := 0; ; part++ {
		n := min(len(data), apps.MaxPieceBytes)
		l.queue = append(l.queue, queued{r: r, piece: apps.Piece{Runner: id, Kind: kind, Seq: seq, Part: part,
			Last: n == len(data), Data: base64.StdEncoding.EncodeToString(data[:n])}})
		data = data[n:]
		if len(data) == 0 {
			break
		}
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

// nextSeq numbers a runner's outgoing messages; a message for a runner
// already gone (PieceClosed) takes -1.
func (l *link) nextSeq(r *runner) int64 {
	if r == nil {
		return -1
	}
	r.outSeq++
	return r.outSeq
}

// run delivers the queue in order, one call at a time, each as many
// pieces as fit apps.MaxDeliverChars.
func (l *link) run() {
	for {
		select {
		case <-l.wake:
		case <-l.done:
			return
		}
		for {
			batch := l.take()
			if len(batch) == 0 {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
			_, err := l.p.Call(ctx, apps.CallDeliver, apps.DeliverParams{Pieces: batch})
			cancel()
			if err != nil {
				select {
				case <-l.done:
					return
				default:
				}
				l.h.log.Warn("a snug provider did not take delivered frames", "instance", l.p.InstanceID(), "err", err)
			}
		}
	}
}

func (l *link) take() []apps.Piece {
	l.mu.Lock()
	defer l.mu.Unlock()
	var batch []apps.Piece
	chars := 0
	n := 0
	for _, q := range l.queue {
		if len(batch) > 0 && chars+len(q.piece.Data) > apps.MaxDeliverChars {
			break
		}
		batch = append(batch, q.piece)
		chars += len(q.piece.Data)
		if q.r != nil {
			q.r.queued -= len(q.piece.Data)
		}
		n++
	}
	clear(l.queue[:n])
	l.queue = l.queue[n:]
	return batch
}

// receivePiece applies one piece of a frame from a runner's app.
func (l *link) receivePiece(pc apps.Piece) {
	r := l.runner(pc.Runner)
	if r == nil {
		return
	}
	data, err := base64.StdEncoding.DecodeString(pc.Data)
	if err != nil || len(data) > apps.MaxPieceBytes {
		r.assembly.reset()
		return
	}
	if raw, ok := r.assembly.add(pc.Seq, pc.Part, pc.Last, data); ok {
		r.post(inbound{frame: raw})
	}
}

// runnerEvent applies a runner's load, detach or reset.
func (l *link) runnerEvent(event, id string) {
	r := l.runner(id)
	if r == nil {
		return
	}
	switch event {
	case apps.EventLoad:
		r.post(inbound{load: true})
	case apps.EventResetAgent:
		r.post(inbound{reset: true})
	case apps.EventDetach:
		l.remove(r)
		l.h.log.Info("runner closed", "app", r.appID)
	}
}

// assembly rebuilds one frame from its pieces: in order, one at a time,
// within apps.MaxRelayBytes. A piece out of order or past the bound
// discards the frame.
type assembly struct {
	seq  int64
	next int
	buf  []byte
}

func (a *assembly) reset() { *a = assembly{seq: a.seq} }

func (a *assembly) add(seq int64, part int, last bool, data []byte) ([]byte, bool) {
	if part == 0 {
		if seq <= a.seq {
			a.reset()
			return nil, false
		}
		*a = assembly{seq: seq}
	} else if seq != a.seq || part != a.next {
		a.reset()
		return nil, false
	}
	if len(a.buf)+len(data) > apps.MaxRelayBytes {
		a.next = -1 // discard the rest of it
		a.buf = nil
		return nil, false
	}
	a.buf = append(a.buf, data...)
	a.next++
	if !last {
		return nil, false
	}
	raw := a.buf
	a.reset()
	return raw, true
}
