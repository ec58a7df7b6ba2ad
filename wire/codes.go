package wire

// Code is an error code from the shared registry. Error responses carry only
// a Code; receivers build their own text from it.
type Code string

// The registry, in the order the reference publishes it, then this broker's
// additions at the end. Never rename or reorder a code: clients of the
// reference broker branch on these strings.
const (
	CodeInvalidRequest        Code = "INVALID_REQUEST"
	CodePolicyDenied          Code = "POLICY_DENIED"
	CodeLeaseBusy             Code = "LEASE_BUSY"
	CodeLeaseRevoked          Code = "LEASE_REVOKED"
	CodeUserStopped           Code = "USER_STOPPED"
	CodeCancelled             Code = "CANCELLED"
	CodeDeadlineExceeded      Code = "DEADLINE_EXCEEDED"
	CodeQueueFull             Code = "QUEUE_FULL"
	CodeConnectionLost        Code = "CONNECTION_LOST"
	CodeProtocolMismatch      Code = "PROTOCOL_MISMATCH"
	CodeStaleTarget           Code = "STALE_TARGET"
	CodeAmbiguousTarget       Code = "AMBIGUOUS_TARGET"
	CodeNotActionable         Code = "NOT_ACTIONABLE"
	CodeUnsupportedCapability Code = "UNSUPPORTED_CAPABILITY"
	CodeNavigationFailed      Code = "NAVIGATION_FAILED"
	CodeVisionUnavailable     Code = "VISION_UNAVAILABLE"
	CodeRequestIDConflict     Code = "REQUEST_ID_CONFLICT"
	CodeJournalFull           Code = "JOURNAL_FULL"
	CodeJournalUnavailable    Code = "JOURNAL_UNAVAILABLE"
	CodeRecoveryRequired      Code = "RECOVERY_REQUIRED"
	CodeBrokerBusy            Code = "BROKER_BUSY"
	CodeBrokerStateUnsafe     Code = "BROKER_STATE_UNSAFE"
	CodeInstallationBusy      Code = "INSTALLATION_BUSY"
	CodeInstallationFailed    Code = "INSTALLATION_FAILED"
	CodeInternalError         Code = "INTERNAL_ERROR"

	// Owner admission (`broker serve --admission=prompt`, from the agent
	// socket spec): the connection waits for the owner's answer, or the owner
	// refused it (final for that connection).
	CodeAdmissionPending Code = "ADMISSION_PENDING"
	CodeAdmissionDenied  Code = "ADMISSION_DENIED"
)

// ReferenceCodes is how many codes of [Codes] the reference publishes; the
// rest are this broker's additions, appended after them.
const ReferenceCodes = 25

// Codes lists every registry code in published order: the reference's, then
// this broker's additions.
var Codes = []Code{
	CodeInvalidRequest, CodePolicyDenied, CodeLeaseBusy, CodeLeaseRevoked,
	CodeUserStopped, CodeCancelled, CodeDeadlineExceeded, CodeQueueFull,
	CodeConnectionLost, CodeProtocolMismatch, CodeStaleTarget, CodeAmbiguousTarget,
	CodeNotActionable, CodeUnsupportedCapability, CodeNavigationFailed,
	CodeVisionUnavailable, CodeRequestIDConflict, CodeJournalFull,
	CodeJournalUnavailable, CodeRecoveryRequired, CodeBrokerBusy,
	CodeBrokerStateUnsafe, CodeInstallationBusy, CodeInstallationFailed,
	CodeInternalError,
	CodeAdmissionPending, CodeAdmissionDenied,
}

var knownCodes = func() map[Code]bool {
	m := make(map[Code]bool, len(Codes))
	for _, c := range Codes {
		m[c] = true
	}
	return m
}()

// Known reports whether c is in the registry.
func (c Code) Known() bool { return knownCodes[c] }

// Error is a failure that crosses the wire as a registry code. Handlers
// return *Error to choose the code of their error response; any other error
// is answered with INTERNAL_ERROR.
type Error struct {
	Code Code
}

// Errorf-free by design: the wire carries only the code, so the text is fixed.
func (e *Error) Error() string { return "remote operation failed (" + string(e.Code) + ")" }

// Is matches another *Error with the same code, so errors.Is(err, wire.Err(code)) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Err returns the *Error for code.
func Err(code Code) *Error { return &Error{Code: code} }
