package rpc

// This file opens backdoors needed only by tests.

// Buffered returns the bytes queued for the writer and not yet written.
func (c *Conn) Buffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buffered
}
