//go:build !linux

package mcpserver

// nameProcess does nothing where processes cannot rename themselves.
func nameProcess(string) {}
