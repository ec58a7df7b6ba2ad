package wire

// Capability names negotiated in hello and welcome. Broker capabilities are
// offered to every peer; provider capabilities are what the broker requires a
// provider (the extension) to advertise before it is registered.
//
// The broker advertises only what it implements: a capability joins
// [BrokerCapabilities] in the same change that makes its tests pass.
const (
	CapRuntime          = "runtime.v1"
	CapProviderAXRead   = "provider.ax-read.v1"
	CapProviderAXFind   = "provider.ax-find.v1"
	CapPersonalMode     = "broker.personal-mode.v1"
	CapLeaseFencing     = "lease.fencing.v1"
	CapLeaseTabScope    = "lease.tab-scope.v1"
	CapAXRead           = "ax.read.v1"
	CapAXFind           = "ax.find.v1"
	CapObserveQuery     = "observe.query.v1"
	CapJournalRecovery  = "journal.recovery.v1"
	CapRuntimeBatch     = "runtime.batch.v1"
	CapInputNamedKeys   = "input.named-keys.v1"
	CapPersonalTabScope = "runtime.personal-tab-scope.v1"
	CapAdmission        = "broker.admission.v1"
	// CapOrderedIDs: the peer's transport IDs after its hello are decimal
	// integers that increase (1, 2, 3, …). When both hello and welcome list
	// it, each receiver remembers only the highest ID instead of a set, so
	// a connection is not closed after 10,000 requests (PROTOCOL.md).
	CapOrderedIDs = "transport.ordered-ids.v1"
)

// BrokerCapabilities is what this broker implements and offers in every
// welcome. broker.personal-mode.v1 is added only in personal access mode, and
// broker.admission.v1 only when the broker asks the owner to admit each new
// client connection (--admission=prompt).
func BrokerCapabilities() []string {
	return []string{CapRuntime, CapProviderAXRead, CapProviderAXFind, CapObserveQuery, CapPersonalTabScope,
		CapJournalRecovery, CapRuntimeBatch, CapOrderedIDs}
}

// RequiredProviderCapabilities is what a provider must advertise to be
// registered. A provider lacking any of them fails its hello with
// PROTOCOL_MISMATCH.
//
// These are the safety floor the runtime is built on (fencing tokens, lease
// scopes, bounded AX reads and searches): a provider without them could only
// be driven through a less safe path, which the broker never falls back to.
func RequiredProviderCapabilities() []string {
	return []string{CapLeaseFencing, CapLeaseTabScope, CapAXRead, CapAXFind, CapInputNamedKeys}
}
