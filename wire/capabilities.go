package wire

// Capability names of the transport and the broker core, negotiated in
// hello and welcome. Each provider kind names its own (package browser
// for the browser kind); the broker's welcome offers these and those of
// every kind it hosts.
const (
	// CapAdmission: the broker asks the owner to admit each new client
	// connection (--admission=prompt); ADMISSION_PENDING and
	// ADMISSION_DENIED may answer a request.
	CapAdmission = "broker.admission.v1"
	// CapOrderedIDs: the peer's transport IDs after its hello are decimal
	// integers that increase (1, 2, 3, …). When both hello and welcome list
	// it, each receiver remembers only the highest ID instead of a set, so
	// a connection is not closed after 10,000 requests (PROTOCOL.md).
	CapOrderedIDs = "transport.ordered-ids.v1"
)
