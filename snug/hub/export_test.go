package hub

import "time"

// SetMaxQueuedChars lowers the per-runner queue bound for a test and
// returns the function that restores it.
func SetMaxQueuedChars(n int) func() {
	old := maxQueuedChars
	maxQueuedChars = n
	return func() { maxQueuedChars = old }
}

// SetSQLTimeout lowers the bound on the chat's SQL for a test and returns
// the function that restores it.
func SetSQLTimeout(d time.Duration) func() {
	old := sqlTimeout
	sqlTimeout = d
	return func() { sqlTimeout = old }
}

// SetProviderRevokeTimeout lowers the bound on a revocation at an OAuth
// provider for a test and returns the function that restores it.
func SetProviderRevokeTimeout(d time.Duration) func() {
	old := providerRevokeTimeout
	providerRevokeTimeout = d
	return func() { providerRevokeTimeout = old }
}
