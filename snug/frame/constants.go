package frame

import (
	"slices"
	"strings"
)

// ProtocolVersion is the v every frame carries and the snug marker of the
// chat envelope (R1). host-ready advertises it in protocolVersions.
const ProtocolVersion = 1

// Size classes (R6), in bytes of a frame's JSON text.
const (
	// MaxFrameBytes (MAX_FRAME_BYTES) bounds every frame outside the two
	// larger classes below.
	MaxFrameBytes = 256 << 10
	// MaxDBFrameBytes (MAX_DB_FRAME_BYTES) bounds db-request and
	// db-response, so a base64-encoded 5 MiB artifact round-trips.
	MaxDBFrameBytes = 8 << 20
	// MaxNetFrameBytes (MAX_NET_FRAME_BYTES) bounds net-request and
	// net-response: a 1 MiB response body plus 64 KiB of envelope.
	MaxNetFrameBytes = 1<<20 + 64<<10
)

// Body ceilings (R6), in bytes. The net executor enforces them; the frames
// only bound characters (see [MaxNetRequestBodyChars]).
const (
	MaxNetRequestBodyBytes  = 256 << 10 // a net-request body, UTF-8
	MaxNetResponseBodyBytes = 1 << 20   // a net-response body, capped while reading
	MaxArtifactBytes        = 5 << 20   // a db export or import
)

// String bounds, in characters. Like the published schemas' maxLength, the
// parser counts Unicode code points. What this host sends is also kept within
// the bound in UTF-16 code units, which is what a JavaScript app counts.
const (
	MaxIDChars             = 128 // requestId, instanceId, appId, and action (R6)
	MaxDisplayNameChars    = 80  // app-announce displayName
	MaxDescriptionChars    = 400 // app-announce description
	MaxIconEmojiChars      = 8   // app-announce iconEmoji
	MaxIconColorChars      = 32  // app-announce iconColor
	MaxLocaleChars         = 32  // host-ready locale
	MaxEventChars          = 64  // host-event and app-event event
	MaxErrorCodeChars      = 64  // error.code
	RawExcerptChars        = 200 // error.rawExcerpt (RAW_EXCERPT_CHARS)
	MaxKVKeyChars          = 256 // db-request key
	MaxNetURLChars         = 4096
	MaxHeaderNameChars     = 128
	MaxHeaderValueChars    = 4096
	MaxNetRequestBodyChars = 262144 // a cheap early bound: characters ≤ bytes
	MaxOpenURLChars        = 2048
	MaxOpenURLReasonChars  = 300
)

// Host choices the spec leaves open, set as the reference implementation
// sets them.
const (
	// MaxInFlight caps the in-flight requests of one instance per kind
	// (app-message, db-request, net-request); the next one is refused
	// HOST_ERROR, retryable.
	MaxInFlight = 8
	// MaxPendingOpenURL: one open-url request may wait on the user at a time.
	MaxPendingOpenURL = 1
	// MaxErrorMessageChars clamps error.message so an error frame stays small.
	MaxErrorMessageChars = 1000
	// RememberedRequestIDs is how many answered requestIds an instance keeps
	// to refuse their reuse (R4: unique per instance); the oldest is forgotten
	// first. In-flight requestIds are always known.
	RememberedRequestIDs = 10_000
)

// StripHeaders (STRIP_HEADERS) are the credential-shaped header names, lower
// case. Hosts strip them from any app-originated request (C1); on a
// net-request any of them, in any case, makes the frame MALFORMED.
var StripHeaders = [...]string{"authorization", "cookie", "set-cookie", "x-api-key", "proxy-authorization"}

// NetMethods (NET_METHODS) are the only methods a net-request may carry,
// exactly as spelled.
var NetMethods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}

// MutatingMethods are the NetMethods that need the user's confirmation.
var MutatingMethods = [...]string{"POST", "PUT", "PATCH", "DELETE"}

// ResponseHeaderWhitelist are the response headers a net-response may carry,
// lower case, besides those starting with [RateLimitHeaderPrefix].
// set-cookie never crosses.
var ResponseHeaderWhitelist = [...]string{"content-type", "content-length", "cache-control", "etag", "last-modified", "retry-after", "link"}

// RateLimitHeaderPrefix is the x-ratelimit-* glob of the response whitelist.
const RateLimitHeaderPrefix = "x-ratelimit-"

// CDNAllowlist (CDN_ALLOWLIST) are the only hosts the runner's CSP lets an
// app load scripts and styles from (C2); the list is never widened at
// runtime.
var CDNAllowlist = [...]string{"cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com"}

// IsCredentialHeader reports whether name, in any case, is in [StripHeaders].
func IsCredentialHeader(name string) bool {
	return slices.Contains(StripHeaders[:], strings.ToLower(name))
}

// IsWhitelistedResponseHeader reports whether a response header may cross
// to the app in a net-response, by its name in any case.
func IsWhitelistedResponseHeader(name string) bool {
	lower := strings.ToLower(name)
	return slices.Contains(ResponseHeaderWhitelist[:], lower) || strings.HasPrefix(lower, RateLimitHeaderPrefix)
}

// IsMutating reports whether a net-request method changes state (and so
// needs the user's confirmation).
func IsMutating(method string) bool { return slices.Contains(MutatingMethods[:], method) }
