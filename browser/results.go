package browser

import (
	"container/list"
	"encoding/json"
	"time"
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

// resultCache keeps recent action results by action identity, bounded by
// count, total bytes and age. The caller holds Runtime.mu.
type resultCache struct {
	order *list.List               // front = newest; values are *cachedResult
	byID  map[string]*list.Element // by identity (scope + request ID)
	bytes int
	now   func() time.Time
}

type cachedResult struct {
	id, leaseID string
	data        []byte
	at          time.Time
}

func newResultCache(now func() time.Time) *resultCache {
	return &resultCache{order: list.New(), byID: make(map[string]*list.Element), now: now}
}

// put stores a copy of res; results over MaxResultSize are not retained.
func (c *resultCache) put(id, leaseID string, res *ActionResult) {
	data, err := json.Marshal(res)
	if err != nil || len(data) > MaxResultSize {
		return
	}
	c.remove(id)
	c.byID[id] = c.order.PushFront(&cachedResult{id: id, leaseID: leaseID, data: data, at: c.now()})
	c.bytes += len(data)
	for c.order.Len() > MaxResults || c.bytes > MaxResultBytes {
		c.remove(c.order.Back().Value.(*cachedResult).id)
	}
}

// get returns a fresh copy of a retained result, or nil. Reads do not
// extend retention.
func (c *resultCache) get(id string) *ActionResult {
	e, ok := c.byID[id]
	if !ok {
		return nil
	}
	cr := e.Value.(*cachedResult)
	if c.now().Sub(cr.at) > ResultRetention {
		c.remove(id)
		return nil
	}
	var res ActionResult
	if json.Unmarshal(cr.data, &res) != nil {
		return nil
	}
	return &res
}

func (c *resultCache) remove(id string) {
	if e, ok := c.byID[id]; ok {
		c.bytes -= len(e.Value.(*cachedResult).data)
		c.order.Remove(e)
		delete(c.byID, id)
	}
}

// purgeLease drops every result of a lease: release purges cached page data.
func (c *resultCache) purgeLease(leaseID string) {
	for e := c.order.Front(); e != nil; {
		next := e.Next()
		if cr := e.Value.(*cachedResult); cr.leaseID == leaseID {
			c.remove(cr.id)
		}
		e = next
	}
}
