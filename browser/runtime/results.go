package runtime

import (
	"container/list"
	"encoding/json"
	"time"

	"github.com/dsh-browser/broker/browser"
)

// Retention of completed action results, per the protocol. Evicting a
// result never evicts its identity fence: a retry then gets a metadata-only
// RECOVERY_REQUIRED instead of a second dispatch.
const (
	MaxResults      = 128
	MaxResultBytes  = 8 << 20
	MaxResultSize   = 128 << 10
	ResultRetention = 120 * time.Second
)

// boundedCache keeps JSON values by key, bounded by count, total bytes, the
// size of one value and age; the oldest go first. The caller serializes
// access (Runtime.mu).
type boundedCache struct {
	limits cacheLimits
	order  *list.List               // front = newest; values are *cached
	byID   map[string]*list.Element // by key
	bytes  int
	now    func() time.Time
}

type cacheLimits struct {
	entries, bytes, size int
	age                  time.Duration
}

type cached struct {
	id, leaseID string
	owner       any // who may read it back, when that matters
	data        []byte
	at          time.Time
}

func newBoundedCache(limits cacheLimits, now func() time.Time) *boundedCache {
	return &boundedCache{limits: limits, order: list.New(), byID: make(map[string]*list.Element), now: now}
}

// put stores data; it reports false, storing nothing, for data over the
// size limit.
func (c *boundedCache) put(id, leaseID string, owner any, data []byte) bool {
	if len(data) > c.limits.size {
		return false
	}
	c.remove(id)
	c.byID[id] = c.order.PushFront(&cached{id: id, leaseID: leaseID, owner: owner, data: data, at: c.now()})
	c.bytes += len(data)
	for c.order.Len() > c.limits.entries || c.bytes > c.limits.bytes {
		c.remove(c.order.Back().Value.(*cached).id)
	}
	return true
}

// get returns a retained value, or nil. Reads do not extend retention.
func (c *boundedCache) get(id string) *cached {
	e, ok := c.byID[id]
	if !ok {
		return nil
	}
	v := e.Value.(*cached)
	if c.now().Sub(v.at) > c.limits.age {
		c.remove(id)
		return nil
	}
	return v
}

func (c *boundedCache) remove(id string) {
	if e, ok := c.byID[id]; ok {
		c.bytes -= len(e.Value.(*cached).data)
		c.order.Remove(e)
		delete(c.byID, id)
	}
}

// purgeLease drops every value of a lease: release purges cached page data.
func (c *boundedCache) purgeLease(leaseID string) {
	for e := c.order.Front(); e != nil; {
		next := e.Next()
		if v := e.Value.(*cached); v.leaseID == leaseID {
			c.remove(v.id)
		}
		e = next
	}
}

// resultCache keeps recent action results by action identity.
type resultCache struct{ *boundedCache }

func newResultCache(now func() time.Time) *resultCache {
	return &resultCache{newBoundedCache(cacheLimits{MaxResults, MaxResultBytes, MaxResultSize, ResultRetention}, now)}
}

// put stores a copy of res; results over MaxResultSize are not retained.
func (c *resultCache) put(id, leaseID string, res *browser.ActionResult) {
	if data, err := json.Marshal(res); err == nil {
		c.boundedCache.put(id, leaseID, nil, data)
	}
}

// get returns a fresh copy of a retained result, or nil.
func (c *resultCache) get(id string) *browser.ActionResult {
	v := c.boundedCache.get(id)
	if v == nil {
		return nil
	}
	var res browser.ActionResult
	if json.Unmarshal(v.data, &res) != nil {
		return nil
	}
	return &res
}
