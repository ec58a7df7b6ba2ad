package frame_test

import (
	"slices"
	"testing"
	"time"

	"github.com/dsh-browser/broker/snug/chat"
	"github.com/dsh-browser/broker/snug/frame"
)

// TestAppendixB compares the constants with the Snug specification's
// Appendix B (normative constants) and the code registries of R5 and
// Appendix A, value by value. Appendix B's other lines belong to other
// parts of the host: storage (MAX_USERDB_BYTES, USERDB_SCHEMA_VERSION,
// VERSIONS_RETAINED, file names), the SNUGENC1 container, connections,
// Part IV (runtime contracts, the data lane, helpers) and [1.1] access.
func TestAppendixB(t *testing.T) {
	for _, c := range []struct {
		spec      string
		got, want int
	}{
		{"PROTOCOL_VERSION", frame.ProtocolVersion, 1},
		{"MAX_FRAME_BYTES", frame.MaxFrameBytes, 262_144},
		{"MAX_DB_FRAME_BYTES", frame.MaxDBFrameBytes, 8_388_608},
		{"MAX_NET_FRAME_BYTES", frame.MaxNetFrameBytes, 1_114_112},
		{"net request body (bytes)", frame.MaxNetRequestBodyBytes, 262_144},
		{"net request body (characters, net-request.json)", frame.MaxNetRequestBodyChars, 262_144},
		{"net response body", frame.MaxNetResponseBodyBytes, 1_048_576},
		{"artifact", frame.MaxArtifactBytes, 5_242_880},
		{"RAW_EXCERPT_CHARS", frame.RawExcerptChars, 200},
		{"MAX_PARSE_FAILURES", chat.MaxParseFailures, 3},
		{"announce displayName", frame.MaxDisplayNameChars, 80},
		{"announce description", frame.MaxDescriptionChars, 400},
		{"announce iconEmoji", frame.MaxIconEmojiChars, 8},
		{"announce iconColor", frame.MaxIconColorChars, 32},
		{"ids and action", frame.MaxIDChars, 128},
		{"net url", frame.MaxNetURLChars, 4096},
		{"net header names (1–128)", frame.MaxHeaderNameChars, 128},
		{"net header values", frame.MaxHeaderValueChars, 4096},
		{"open-url url", frame.MaxOpenURLChars, 2048},
		{"open-url reason", frame.MaxOpenURLReasonChars, 300},
		{"ref db in-flight cap per instance", frame.MaxInFlight, 8},
		// Bounds only the published schemas state.
		{"event (host-event.json, app-event.json)", frame.MaxEventChars, 64},
		{"locale (host-ready.json)", frame.MaxLocaleChars, 32},
		{"error.code (app-response.json)", frame.MaxErrorCodeChars, 64},
		{"key (db-request.json)", frame.MaxKVKeyChars, 256},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.spec, c.got, c.want)
		}
	}
	if got, want := chat.ThreadConflictBackoff[:], []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("THREAD_CONFLICT_BACKOFF_MS = %v, want %v", got, want)
	}
	if chat.Tag != "[SNUG_APP_REQUEST]" {
		t.Errorf("tag = %q", chat.Tag)
	}
	for _, l := range []struct {
		spec      string
		got, want []string
	}{
		{"CDN_ALLOWLIST", frame.CDNAllowlist[:], []string{"cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com"}},
		{"STRIP_HEADERS", frame.StripHeaders[:], []string{"authorization", "cookie", "set-cookie", "x-api-key", "proxy-authorization"}},
		{"NET_METHODS", frame.NetMethods[:], []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}},
		{"mutating methods", frame.MutatingMethods[:], []string{"POST", "PUT", "PATCH", "DELETE"}},
		{"response whitelist", append(frame.ResponseHeaderWhitelist[:], frame.RateLimitHeaderPrefix+"*"),
			[]string{"content-type", "content-length", "cache-control", "etag", "last-modified", "retry-after", "link", "x-ratelimit-*"}},
		{"R5 wire codes", frame.Codes[:], []string{"PARSE_FAILED", "THREAD_CONFLICT", "NETWORK_ERROR", "RESET_FAILED", "CANCELLED",
			"SUPERSEDED", "UNSUPPORTED_VERSION", "CONSENT_REQUIRED", "AUTH_REQUIRED", "HOST_ERROR"}},
		{"Appendix A net codes", frame.NetCodes[:], []string{"NET_INVALID_REQUEST", "NET_NOT_APPROVED", "NET_IMPORTED_UNAPPROVED",
			"NET_AMBIGUOUS_CONNECTION", "NET_SCHEME_BLOCKED", "NET_HOST_BLOCKED", "NET_SSRF_BLOCKED", "NET_CONFIRM_DENIED",
			"NET_REDIRECT_BLOCKED", "NET_SIZE_EXCEEDED", "NET_FETCH_FAILED", "NET_AUTH_FAILED", "NET_SCRUBBED_HEADER_STRIPPED"}},
	} {
		if !slices.Equal(l.got, l.want) {
			t.Errorf("%s = %v\nwant %v", l.spec, l.got, l.want)
		}
	}
	if slices.Contains(frame.Codes[:], frame.CodeMalformed) || frame.CodeMalformed != "MALFORMED" {
		t.Error("MALFORMED is the R1 answer, not a registry member")
	}
	if len(frame.Types) != 13 {
		t.Errorf("%d frame types, want the thirteen of Part I §2", len(frame.Types))
	}
}

func TestHeaderLists(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "COOKIE": true, "Set-Cookie": true, "X-API-Key": true, "Proxy-Authorization": true,
		"X-Authorization": false, "cookie2": false, "x-api-keys": false, "authorization ": false,
	} {
		if frame.IsCredentialHeader(name) != want {
			t.Errorf("IsCredentialHeader(%q) = %v", name, !want)
		}
	}
	for name, want := range map[string]bool{
		"Content-Type": true, "ETAG": true, "link": true, "X-RateLimit-Remaining": true, "x-ratelimit-": true,
		"Set-Cookie": false, "Server": false, "x-ratelimit": false, "X-Rate-Limit-Reset": false,
	} {
		if frame.IsWhitelistedResponseHeader(name) != want {
			t.Errorf("IsWhitelistedResponseHeader(%q) = %v", name, !want)
		}
	}
	for m, want := range map[string]bool{"POST": true, "DELETE": true, "GET": false, "HEAD": false, "post": false} {
		if frame.IsMutating(m) != want {
			t.Errorf("IsMutating(%q) = %v", m, !want)
		}
	}
}

// TestSizeClasses: each type's class, as R6 assigns it.
func TestSizeClasses(t *testing.T) {
	for _, ty := range frame.Types {
		if got, want := ty.SizeLimit(), sizeClass(kindOf(ty)); got != want {
			t.Errorf("%s.SizeLimit() = %d, want %d", ty, got, want)
		}
	}
}
