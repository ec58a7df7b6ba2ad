package frame

// Error codes of error.code (R5). The code is an open string: receivers
// treat a code they do not know by its retryable flag and show it as
// HOST_ERROR.
const (
	CodeParseFailed        = "PARSE_FAILED"
	CodeThreadConflict     = "THREAD_CONFLICT"
	CodeNetworkError       = "NETWORK_ERROR"
	CodeResetFailed        = "RESET_FAILED"
	CodeCancelled          = "CANCELLED"
	CodeSuperseded         = "SUPERSEDED"
	CodeUnsupportedVersion = "UNSUPPORTED_VERSION"
	CodeConsentRequired    = "CONSENT_REQUIRED" // reserved
	CodeAuthRequired       = "AUTH_REQUIRED"    // reserved
	CodeHostError          = "HOST_ERROR"

	// CodeMalformed is the R1 answer to a frame that does not parse; it is
	// not a registry member.
	CodeMalformed = "MALFORMED"
)

// The net capability's codes (Appendix A), each reachable from one gate of
// the net executor.
const (
	CodeNetInvalidRequest         = "NET_INVALID_REQUEST"
	CodeNetNotApproved            = "NET_NOT_APPROVED"
	CodeNetImportedUnapproved     = "NET_IMPORTED_UNAPPROVED"
	CodeNetAmbiguousConnection    = "NET_AMBIGUOUS_CONNECTION"
	CodeNetSchemeBlocked          = "NET_SCHEME_BLOCKED"
	CodeNetHostBlocked            = "NET_HOST_BLOCKED"
	CodeNetSSRFBlocked            = "NET_SSRF_BLOCKED"
	CodeNetConfirmDenied          = "NET_CONFIRM_DENIED"
	CodeNetRedirectBlocked        = "NET_REDIRECT_BLOCKED"
	CodeNetSizeExceeded           = "NET_SIZE_EXCEEDED"
	CodeNetFetchFailed            = "NET_FETCH_FAILED"
	CodeNetAuthFailed             = "NET_AUTH_FAILED"
	CodeNetScrubbedHeaderStripped = "NET_SCRUBBED_HEADER_STRIPPED" // reserved
)

// Codes is the wire registry of R5, in the spec's order.
var Codes = [...]string{
	CodeParseFailed, CodeThreadConflict, CodeNetworkError, CodeResetFailed, CodeCancelled,
	CodeSuperseded, CodeUnsupportedVersion, CodeConsentRequired, CodeAuthRequired, CodeHostError,
}

// NetCodes is the net registry of Appendix A, in the spec's order.
var NetCodes = [...]string{
	CodeNetInvalidRequest, CodeNetNotApproved, CodeNetImportedUnapproved, CodeNetAmbiguousConnection,
	CodeNetSchemeBlocked, CodeNetHostBlocked, CodeNetSSRFBlocked, CodeNetConfirmDenied,
	CodeNetRedirectBlocked, CodeNetSizeExceeded, CodeNetFetchFailed, CodeNetAuthFailed,
	CodeNetScrubbedHeaderStripped,
}
