package runtime

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/wire"
)

// MaxRefs bounds the refs remembered per lease.
const MaxRefs = 2048

// target is what a ref stands for: one element of one document, with the
// identity it had when observed.
type target struct {
	BackendNodeID int64  `json:"backendNodeId"`
	Role          string `json:"role"`
	Name          string `json:"name"`
	editable      bool
	region        bool
	epoch         string
	frameEpoch    string // the child frame document it is in, for a frame's element
}

type targetKey struct {
	epoch    string
	backend  int64
	role     string
	name     string
	editable bool
}

// page is the broker's view of one leased tab: its document epoch, the refs
// it handed out, and a serial queue for work on the tab.
type page struct {
	lease *lease.Lease
	queue chan struct{} // one slot: observations and actions on a tab never interleave

	mu       sync.Mutex
	epoch    string
	url      string // of the document last observed (its origin is the activity log's)
	revision int64
	queued   int // operations holding or waiting for the queue slot
	refs     map[string]*target
	byKey    map[targetKey]string
	frames   map[string]string // provider frame ID -> public frame ID
	// traversals are the page readings that can go on, by continuation.
	traversals map[string]*traversal
	wake       chan struct{} // closed and replaced when the provider reports a change
}

func newPage(l *lease.Lease, epoch string) *page {
	return &page{
		lease:      l,
		queue:      make(chan struct{}, 1),
		epoch:      epoch,
		refs:       make(map[string]*target),
		byKey:      make(map[targetKey]string),
		frames:     make(map[string]string),
		traversals: make(map[string]*traversal),
		wake:       make(chan struct{}),
	}
}

func (r *Runtime) page(leaseID string) *page {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pages[leaseID]
}

func (r *Runtime) dropPage(leaseID string) {
	r.mu.Lock()
	delete(r.pages, leaseID)
	r.mu.Unlock()
}

// currentEpoch is the main document's epoch as last read.
func (p *page) currentEpoch() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// changed wakes everyone waiting for the page to change.
func (p *page) changed() {
	p.mu.Lock()
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// changes returns a channel closed at the next reported change.
func (p *page) changes() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wake
}

// observed records a new read of the page at url: a new epoch forgets
// every ref. It returns the new revision.
func (p *page) observed(epoch, url string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.url = url
	if epoch != p.epoch {
		p.epoch = epoch
		clear(p.refs)
		clear(p.byKey)
	}
	p.revision++
	return p.revision
}

// ref returns the ref for an element, minting one if this identity was not
// seen before in this document. Refs beyond MaxRefs reset the cache: old
// refs then fail STALE_TARGET and the client observes again.
func (p *page) ref(t target) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	t.epoch = p.epoch
	if t.frameEpoch != "" {
		t.epoch = t.frameEpoch // a frame's element never resolves against the main document
	}
	k := targetKey{t.epoch, t.BackendNodeID, t.Role, t.Name, t.editable}
	if id, ok := p.byKey[k]; ok {
		return id
	}
	if len(p.refs) >= MaxRefs {
		clear(p.refs)
		clear(p.byKey)
	}
	id := "r" + randomHex(8)
	p.refs[id] = &t
	p.byKey[k] = id
	return id
}

// origin is the origin of the document last observed on the page: under a
// tab-scoped lease the tab may have left the origin it was claimed on.
func (p *page) origin(l *lease.Lease) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o, ok := httpOrigin(p.url); ok {
		return o
	}
	return l.Origin
}

// observedFrame counts a read of a child frame: a new revision, while the
// main document's epoch and refs stay.
func (p *page) observedFrame() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.revision++
	return p.revision
}

// inFrame returns a view of p whose refs are minted for a child frame's
// document.
func (p *page) inFrame(epoch string) refMinter { return frameMinter{p, epoch} }

// frameRef reports whether ref names an element of a child frame.
func (p *page) frameRef(ref string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.refs[ref]
	return ok && t.frameEpoch != ""
}

// resolve returns the target of a ref observed in epoch — the main
// document's, or with inFrame a child frame's — or nil when the ref is
// unknown, from another document, or the page has moved on.
func (p *page) resolve(ref, epoch string, inFrame bool) *target {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.refs[ref]
	switch {
	case !ok || t.epoch != epoch:
		return nil
	case inFrame: // an element of that child frame's document
		if t.frameEpoch != epoch {
			return nil
		}
	case t.frameEpoch != "" || p.epoch != epoch:
		return nil
	}
	return t
}

// MaxTabQueue bounds the work on one tab: the operation holding the tab's
// slot and those waiting for it. One more is QUEUE_FULL at once, and
// nothing queued is evicted.
const MaxTabQueue = 16

// acquire takes the tab's queue slot: QUEUE_FULL when MaxTabQueue
// operations already hold or wait for it, DEADLINE_EXCEEDED when done
// closes first.
func (p *page) acquire(done <-chan struct{}) error {
	p.mu.Lock()
	if p.queued >= MaxTabQueue {
		p.mu.Unlock()
		return wire.Err(wire.CodeQueueFull)
	}
	p.queued++
	p.mu.Unlock()
	select {
	case p.queue <- struct{}{}:
		return nil
	case <-done:
		p.mu.Lock()
		p.queued--
		p.mu.Unlock()
		return wire.Err(wire.CodeDeadlineExceeded)
	}
}

func (p *page) release() {
	<-p.queue
	p.mu.Lock()
	p.queued--
	p.mu.Unlock()
}

// refMinter mints refs for the elements of an observation.
type refMinter interface{ ref(t target) string }

type frameMinter struct {
	p     *page
	epoch string
}

func (m frameMinter) ref(t target) string {
	t.frameEpoch = m.epoch
	return m.p.ref(t)
}

// leased returns owner's live lease, its page and its browser.
func (r *Runtime) leased(owner lease.Owner, leaseID string) (*lease.Lease, *page, Provider, error) {
	l, err := r.leases.Get(owner, leaseID)
	if err != nil {
		return nil, nil, nil, err
	}
	p := r.page(leaseID)
	if p == nil {
		return nil, nil, nil, wire.Err(wire.CodeLeaseRevoked)
	}
	prov, err := r.provider(l.InstanceID)
	if err != nil {
		return nil, nil, nil, err
	}
	return l, p, prov, nil
}

// onPage decodes {sessionId, leaseId}, finds the caller's live lease on a
// provider with capability (when not empty) and runs fn in the page's queue
// under ProviderTimeout.
func (r *Runtime) onPage(ctx context.Context, c Client, params json.RawMessage, capability string,
	fn func(context.Context, *lease.Lease, *page, Provider) (any, error)) (any, error) {
	var in browser.LeaseParams
	if err := decodeParams(params, &in); err != nil {
		return nil, err
	}
	if !bounded(in.SessionID, 1, 256) || !bounded(in.LeaseID, 1, 256) {
		return nil, invalid()
	}
	return r.withPage(ctx, lease.Owner{Conn: c.ConnID(), Session: in.SessionID}, in.LeaseID, capability, fn)
}

// withPage finds owner's live lease on a provider with capability (when not
// empty) and runs fn in the page's queue under ProviderTimeout.
func (r *Runtime) withPage(ctx context.Context, owner lease.Owner, leaseID, capability string,
	fn func(context.Context, *lease.Lease, *page, Provider) (any, error)) (any, error) {
	l, p, prov, err := r.leased(owner, leaseID)
	if err != nil {
		return nil, err
	}
	if capability != "" && !prov.Capable(capability) {
		return nil, wire.Err(wire.CodeUnsupportedCapability)
	}
	ctx, cancel := context.WithTimeout(ctx, ProviderTimeout)
	defer cancel()
	if err := p.acquire(ctx.Done()); err != nil {
		return nil, err
	}
	defer p.release()
	return fn(ctx, l, p, prov)
}
