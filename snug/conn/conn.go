// Package conn is the Snug connection model (spec Part III §12–§13, §15):
// what a connection requirement may say, its canonical form, the host
// ceiling an approval freezes from it, the header and query templates that
// say where a credential goes, connection-relative URLs, and the names of
// the credential keys in snug_secrets.
//
// A connection links one app to one third-party provider so that the host —
// never the app — attaches the user's credential to that app's requests.
// The requirement (what the app needs) is credential-free and strict at
// every level: [Parse] refuses an unknown key anywhere, a bound broken, a
// provider name outside printable ASCII, a template naming a field that is
// not declared, a credential-shaped value, or a host ceiling that would
// hold this machine. The grant (what the user allowed) is a row of
// snug_connections, written by the five writers of package snug/userdb.
//
// The pieces another hub must agree with byte for byte are here: the
// canonical form ([Requirement.Canonical]: keys sorted recursively, no
// whitespace, array order kept), which decides requirement_version and
// import reconciliation, and the derived ceiling ([Requirement.Ceiling],
// sorted, unique, normalised; [HostsJSON] its stored bytes).
package conn

import (
	"regexp"
	"strings"
)

// Normative constants (spec Appendix B, "Connections").
const (
	// MaxSlotsPerApp is AUTH_MAX_SLOTS_PER_APP: connection rows per app,
	// revoked tombstones included.
	MaxSlotsPerApp = 8
	// RefreshSkewSeconds: an OAuth access token is refreshed this close to
	// its expiry.
	RefreshSkewSeconds = 60
	// ScrubMinChars: injected values shorter than this are not scrubbed
	// from responses (too likely to be ordinary text).
	ScrubMinChars = 4
	// ProviderErrorChars bounds a provider's error text shown to a person.
	ProviderErrorChars = 160
)

// Status is a connection row's status: exactly three values. "Needs
// re-approval" is derived (approved with a pending requirement), never a
// fourth status.
type Status string

// The three statuses.
const (
	StatusDeclared Status = "declared"
	StatusApproved Status = "approved"
	StatusRevoked  Status = "revoked"
)

// Provenance is the channel a requirement arrived on. It is display only:
// this host always shows the full, field-by-field review.
type Provenance string

// The provenances (§12.2; shared is 1.1's share act).
const (
	ProvenanceRegistry  Provenance = "registry"
	ProvenanceInference Provenance = "inference"
	ProvenanceUserDocs  Provenance = "user_docs"
	ProvenanceStarter   Provenance = "starter"
	ProvenanceUser      Provenance = "user"
	ProvenanceShared    Provenance = "shared"
)

// ValidProvenance reports whether p is one of the provenances.
func ValidProvenance(p Provenance) bool {
	switch p {
	case ProvenanceRegistry, ProvenanceInference, ProvenanceUserDocs, ProvenanceStarter, ProvenanceUser, ProvenanceShared:
		return true
	}
	return false
}

// slotRule is the slot charset: lower case only, so one provider cannot
// split into two rows by case.
var slotRule = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// ValidSlot reports whether s is a slot: 1–40 of [a-z0-9-], not starting
// with a hyphen.
func ValidSlot(s string) bool { return slotRule.MatchString(s) }

// Secret keys in snug_secrets (§13). App ids are host-minted and slots and
// field keys exclude ':', so the segments cannot run into each other.
const (
	// StateHMACKey holds the OAuth state signing key, shared by all apps.
	StateHMACKey = "auth:_state_hmac"
	// FlowKeyPrefix starts the key of an OAuth flow in progress.
	FlowKeyPrefix = "auth:_flow:"
	// StateField is the field name of a slot's dynamic state (JSON).
	StateField = "_connection"
)

// CredentialKey is the key of one credential value: auth:<appId>:<slot>:<field>.
func CredentialKey(appID, slot, field string) string {
	return "auth:" + appID + ":" + slot + ":" + field
}

// StateKey is the key of a slot's dynamic state: auth:<appId>:<slot>:_connection.
func StateKey(appID, slot string) string { return CredentialKey(appID, slot, StateField) }

// SlotKeyPrefix starts every secret key of one slot (what revocation deletes).
func SlotKeyPrefix(appID, slot string) string { return "auth:" + appID + ":" + slot + ":" }

// FlowKey is the key of an OAuth flow in progress.
func FlowKey(flowID string) string { return FlowKeyPrefix + flowID }

// isPrintableASCII reports whether s is U+0020–U+007E only.
func isPrintableASCII(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) < 0
}
