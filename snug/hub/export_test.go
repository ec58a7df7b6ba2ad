package hub

// SetMaxQueuedChars lowers the per-runner queue bound for a test and
// returns the function that restores it.
func SetMaxQueuedChars(n int) func() {
	old := maxQueuedChars
	maxQueuedChars = n
	return func() { maxQueuedChars = old }
}
