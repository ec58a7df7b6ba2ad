package wire

import (
	"encoding/json"
	"regexp"
	"strconv"
	"time"
)

// Roles a peer declares in its hello.
const (
	RoleClient   = "client"
	RoleProvider = "provider"
)

// Handshake constants.
const (
	Bootstrap       = 1 // the only bootstrap revision
	Version         = 1 // the only implemented wire version
	MaxVersions     = 8 // unique positive integers in an offer
	MaxVersionValue = 65535
	MaxCapabilities = 64 // unique names in any capability list
	MaxTokenLength  = 256
	MaxInstanceID   = 128
	MaxInstanceText = 256
	MaxEpochLength  = 128
)

var (
	journalKeyPattern = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// kindPattern is the grammar of a provider kind and of an instance's
	// family: a short lowercase word.
	kindPattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// MaxKindLength bounds a provider kind and an instance family.
const MaxKindLength = 32

// HandshakeTimeout bounds the time from connecting to a welcome: the
// broker closes a peer whose hello has not succeeded by then, and the
// extension gives up waiting for its welcome.
const HandshakeTimeout = 3 * time.Second

// DefaultKind is the kind of a provider whose hello declares none: a
// browser, as the reference's extension is.
const DefaultKind = "browser"

// Hello is the payload of the first request on every connection. A client
// hello has no Instance and may advertise Capabilities (the reference's
// clients advertise none); a provider hello must have both, and may declare
// its Kind (see [Hello.ProviderKind]).
type Hello struct {
	Bootstrap            int       `json:"bootstrap"`
	Versions             []int     `json:"versions"`
	Role                 string    `json:"role"`
	Token                string    `json:"token,omitempty"`
	JournalKey           string    `json:"journalKey,omitempty"`
	RequiredCapabilities []string  `json:"requiredCapabilities,omitempty"`
	Capabilities         []string  `json:"capabilities,omitempty"`
	Kind                 string    `json:"kind,omitempty"`
	Instance             *Instance `json:"instance,omitempty"`
}

// ProviderKind returns the kind a provider hello declares, or [DefaultKind]
// when it declares none.
func (h *Hello) ProviderKind() string {
	if h.Kind == "" {
		return DefaultKind
	}
	return h.Kind
}

// Instance is a provider's description of itself: a browser profile, a
// Snug host, a terminal. Its kind says what Family must be.
type Instance struct {
	ID           string `json:"id"`
	Family       string `json:"family"`
	Brand        string `json:"brand"`
	Version      string `json:"version"`
	ProfileLabel string `json:"profileLabel"`
}

// Welcome is the value of a successful hello response.
type Welcome struct {
	Version         int      `json:"version"`
	ConnectionEpoch string   `json:"connectionEpoch"`
	Capabilities    []string `json:"capabilities"`
}

// MarshalJSON encodes the hello. A provider hello always carries its
// capabilities, even an empty list, because the key is required for that
// role; the struct tag's omitempty would drop it.
func (h Hello) MarshalJSON() ([]byte, error) {
	type plain Hello // the same fields without this method
	if h.Role != RoleProvider {
		return json.Marshal(plain(h))
	}
	caps := h.Capabilities
	if caps == nil {
		caps = []string{}
	}
	return json.Marshal(struct {
		plain
		Capabilities []string `json:"capabilities"`
	}{plain(h), caps})
}

// OffersVersion reports whether the hello offers wire version v.
func (h *Hello) OffersVersion(v int) bool {
	for _, x := range h.Versions {
		if x == v {
			return true
		}
	}
	return false
}

// ParseHello decodes and validates a hello payload (the params of the hello
// request) against $defs.hello.
func ParseHello(data []byte) (*Hello, error) {
	obj, err := decodeObject(data, "hello")
	if err != nil {
		return nil, err
	}
	role, err := stringField(obj, "role")
	if err != nil {
		return nil, err
	}
	h := &Hello{Role: role}
	switch role {
	case RoleClient:
		err = onlyKeys(obj, "", "bootstrap", "versions", "role", "token", "requiredCapabilities", "capabilities", "journalKey")
	case RoleProvider:
		err = onlyKeys(obj, "", "bootstrap", "versions", "role", "token", "requiredCapabilities", "capabilities", "kind", "instance")
	default:
		err = invalid("role", "must be client or provider")
	}
	if err != nil {
		return nil, err
	}

	raw, ok := obj["bootstrap"]
	if !ok {
		return nil, missing("bootstrap")
	}
	if h.Bootstrap, err = integer(raw, "bootstrap", Bootstrap, Bootstrap); err != nil {
		return nil, invalid("bootstrap", "must be 1")
	}

	raw, ok = obj["versions"]
	if !ok {
		return nil, missing("versions")
	}
	items, err := array(raw, "versions", 1, MaxVersions)
	if err != nil {
		return nil, err
	}
	seen := make(map[int]bool, len(items))
	for i, item := range items {
		v, err := integer(item, "versions["+strconv.Itoa(i)+"]", 1, MaxVersionValue)
		if err != nil {
			return nil, err
		}
		if seen[v] {
			return nil, invalid("versions", "must not repeat a version")
		}
		seen[v] = true
		h.Versions = append(h.Versions, v)
	}

	if raw, ok := obj["token"]; ok {
		if h.Token, err = boundedString(raw, "token", 1, MaxTokenLength); err != nil {
			return nil, err
		}
	}
	if raw, ok := obj["requiredCapabilities"]; ok {
		if h.RequiredCapabilities, err = nameList(raw, "requiredCapabilities", MaxCapabilities); err != nil {
			return nil, err
		}
	}
	if raw, ok := obj["journalKey"]; ok {
		s, err := rawString(raw, "journalKey")
		if err != nil {
			return nil, err
		}
		if !journalKeyPattern.MatchString(s) {
			return nil, invalid("journalKey", "must be 64 lowercase hexadecimal characters")
		}
		h.JournalKey = s
	}

	if raw, ok := obj["capabilities"]; ok {
		if h.Capabilities, err = nameList(raw, "capabilities", MaxCapabilities); err != nil {
			return nil, err
		}
	}
	if role == RoleProvider {
		if _, ok := obj["capabilities"]; !ok {
			return nil, missing("capabilities")
		}
		if h.Capabilities == nil {
			h.Capabilities = []string{}
		}
		if raw, ok := obj["kind"]; ok {
			if h.Kind, err = kindString(raw, "kind"); err != nil {
				return nil, err
			}
		}
		raw, ok := obj["instance"]
		if !ok {
			return nil, missing("instance")
		}
		if h.Instance, err = parseInstance(raw); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func parseInstance(raw json.RawMessage) (*Instance, error) {
	obj, err := decodeObject(raw, "instance")
	if err != nil {
		return nil, err
	}
	if err := onlyKeys(obj, "instance", "id", "family", "brand", "version", "profileLabel"); err != nil {
		return nil, err
	}
	in := &Instance{}
	fields := []struct {
		key string
		dst *string
		max int
	}{
		{"id", &in.ID, MaxInstanceID},
		{"brand", &in.Brand, MaxInstanceText},
		{"version", &in.Version, MaxInstanceText},
		{"profileLabel", &in.ProfileLabel, MaxInstanceText},
	}
	for _, f := range fields {
		v, ok := obj[f.key]
		if !ok {
			return nil, missing("instance." + f.key)
		}
		if *f.dst, err = boundedString(v, "instance."+f.key, 1, f.max); err != nil {
			return nil, err
		}
	}
	v, ok := obj["family"]
	if !ok {
		return nil, missing("instance.family")
	}
	if in.Family, err = kindString(v, "instance.family"); err != nil {
		return nil, err
	}
	return in, nil
}

// kindString decodes a kind or family: 1 to MaxKindLength characters of
// kindPattern.
func kindString(raw json.RawMessage, field string) (string, error) {
	s, err := boundedString(raw, field, 1, MaxKindLength)
	if err != nil {
		return "", err
	}
	if !kindPattern.MatchString(s) {
		return "", invalid(field, "must be a lowercase word (a-z, 0-9, -)")
	}
	return s, nil
}

// ParseWelcome decodes and validates a welcome payload against $defs.welcome.
func ParseWelcome(data []byte) (*Welcome, error) {
	obj, err := decodeObject(data, "welcome")
	if err != nil {
		return nil, err
	}
	if err := onlyKeys(obj, "", "version", "connectionEpoch", "capabilities"); err != nil {
		return nil, err
	}
	w := &Welcome{}
	raw, ok := obj["version"]
	if !ok {
		return nil, missing("version")
	}
	if w.Version, err = integer(raw, "version", 1, MaxVersionValue); err != nil {
		return nil, err
	}
	raw, ok = obj["connectionEpoch"]
	if !ok {
		return nil, missing("connectionEpoch")
	}
	if w.ConnectionEpoch, err = boundedString(raw, "connectionEpoch", 1, MaxEpochLength); err != nil {
		return nil, err
	}
	raw, ok = obj["capabilities"]
	if !ok {
		return nil, missing("capabilities")
	}
	if w.Capabilities, err = nameList(raw, "capabilities", MaxCapabilities); err != nil {
		return nil, err
	}
	if w.Capabilities == nil {
		w.Capabilities = []string{}
	}
	return w, nil
}
