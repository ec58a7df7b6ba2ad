package conn

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-browser/broker/snug/internal/jsonread"
	"github.com/dsh-browser/broker/snug/ssrf"
)

// Requirement bounds (spec §12.5, Appendix B).
const (
	MaxProviderNameChars   = 120
	MaxURLChars            = 300
	MaxFields              = 8
	MaxLabelChars          = 80
	MaxDescriptionChars    = 200
	MaxPlaceholderChars    = 60
	MaxInstructions        = 10
	MaxInstructionChars    = 300
	MaxScopes              = 64
	MaxScopeChars          = 200
	MaxTemplateEntries     = 8
	MaxTemplateValueChars  = 300
	MaxHosts               = 32
	MaxHostChars           = 253
	MaxTestPathChars       = 200
	MaxAuthorizeParams     = 16 // not bounded by the spec; a reviewable handful
	MaxAuthorizeParamName  = 64
	MaxAuthorizeParamValue = 200
	// MaxRequirementBytes bounds the JSON text of a requirement (our
	// choice: every bound above, written out, fits well within it).
	MaxRequirementBytes = 64 << 10
)

// Kind is how a connection authenticates: one of seven values, never read
// back as another.
type Kind string

// The seven kinds.
const (
	KindAPIKey           Kind = "api_key"
	KindBearerToken      Kind = "bearer_token"
	KindBasicAuth        Kind = "basic_auth"
	KindOAuthClientCreds Kind = "oauth2_client_creds"
	KindOAuthAuthCode    Kind = "oauth2_auth_code"
	KindLinkedDevice     Kind = "linked_device"
	KindNone             Kind = "none"
)

var kinds = []string{string(KindAPIKey), string(KindBearerToken), string(KindBasicAuth), string(KindOAuthClientCreds),
	string(KindOAuthAuthCode), string(KindLinkedDevice), string(KindNone)}

// OAuth reports whether k is one of the two OAuth kinds.
func (k Kind) OAuth() bool { return k == KindOAuthClientCreds || k == KindOAuthAuthCode }

// Requirement is a parsed connection requirement (§12.5): what an app
// needs, credential-free. Optional members are nil or "" when absent.
type Requirement struct {
	Slot             string
	Provider         Provider
	Kind             Kind
	Fields           []Field
	Registration     *Registration
	Endpoints        *Endpoints
	Scopes           []string
	PKCE             *bool
	AuthorizeParams  map[string]string
	Request          *Templates
	LANHost          *LANHost
	DeclaredAPIHosts []string // normalised (IDNA ASCII, lower case)
	TestRequest      *TestRequest

	canonical string
}

// Provider names the third party.
type Provider struct {
	Name        string // printable ASCII, ≤120
	HomepageURL string
	DocsURL     string
}

// Field is one credential field the user fills in: its definition, never
// its value.
type Field struct {
	Key         string // ^[a-z0-9_]{1,40}$
	Label       string
	Type        string // text, secret, password or url
	Description string
	Placeholder string
	Required    *bool // nil: required
}

// IsRequired reports whether the field must have a value.
func (f Field) IsRequired() bool { return f.Required == nil || *f.Required }

// Registration is the walkthrough for getting a credential: plain-text
// steps, never markup or links.
type Registration struct {
	ConsoleURL   string
	Instructions []string
}

// Endpoints are the OAuth URLs.
type Endpoints struct {
	AuthorizeURL, TokenURL, RefreshURL, RevokeURL string
}

// Templates say where credentials go: header and query-parameter values
// that may name declared fields, the request tokens and the five helpers.
type Templates struct {
	Header map[string]string // nil when absent
	Query  map[string]string // nil when absent
}

// LANHost declares that a device address on the local network will be
// collected later; it is not a host.
type LANHost struct {
	Class string // rfc1918-ipv4-literal
	Label string
}

// TestRequest is the optional "test this connection" probe: GET, a path.
type TestRequest struct {
	Method       string
	PathAndQuery string
}

// UsesPKCE reports whether an OAuth flow uses PKCE (the default).
func (r *Requirement) UsesPKCE() bool { return r.PKCE == nil || *r.PKCE }

// FieldKeys lists the declared field keys, in order.
func (r *Requirement) FieldKeys() []string {
	keys := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		keys[i] = f.Key
	}
	return keys
}

// Canonical returns the canonical form: the parsed requirement as JSON with
// keys sorted at every level, no whitespace, array order kept. Two
// requirements are the same exactly when their canonical forms are.
func (r *Requirement) Canonical() string { return r.canonical }

// ErrInvalid matches every refusal of [Parse].
var ErrInvalid = errors.New("invalid connection requirement")

// Error is a refusal of [Parse]: the member at Field breaks Reason.
type Error struct {
	Field  string
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "connection requirement: " + e.Reason
	}
	return "connection requirement: " + e.Field + " " + e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

var (
	fieldKeyRule   = regexp.MustCompile(`^[a-z0-9_]{1,40}$`)
	headerNameRule = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
	queryNameRule  = regexp.MustCompile(`^[A-Za-z0-9_.\[\]-]{1,64}$`)
	hostRule       = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)
)

// LANClass is the one class of LAN host.
const LANClass = "rfc1918-ipv4-literal"

// Parse reads a requirement strictly, in the spec's order: schema bounds
// (an unknown key at any depth refuses), the kind rules, then the template
// lint against the declared field keys, the credential-shape scan, and the
// host rules (a ceiling never holds this machine). Every refusal is an
// [*Error] matching [ErrInvalid].
//
// userLayer is refused: it is accepted only when a registry synthesised it,
// and this host keeps no registry.
func Parse(raw []byte) (*Requirement, error) {
	if len(raw) > MaxRequirementBytes {
		return nil, &Error{Reason: fmt.Sprintf("is %d bytes, over %d", len(raw), MaxRequirementBytes)}
	}
	obj, ok := jsonread.Object(raw)
	if !ok {
		return nil, &Error{Reason: "must be a JSON object"}
	}
	p := &parser{r: jsonread.NewReader(obj, "")}
	req := p.requirement()
	if p.r.Err != nil {
		return nil, &Error{Field: p.r.Err.Field, Reason: p.r.Err.Reason}
	}
	if err := req.check(); err != nil {
		return nil, err
	}
	req.canonical = encodeCanonical(req.tree())
	return req, nil
}

// ParseString is Parse of a string.
func ParseString(s string) (*Requirement, error) { return Parse([]byte(s)) }

type parser struct{ r *jsonread.Reader }

func (p *parser) requirement() *Requirement {
	r := p.r
	r.Only("slot", "provider", "kind", "fields", "registration", "endpoints", "scopes", "pkce", "authorizeParams",
		"request", "userLayer", "lanHost", "declaredApiHosts", "testRequest")
	if _, ok := r.Raw("userLayer"); ok {
		r.Fail("userLayer", "is accepted only from a provider registry, which this host does not keep")
	}
	req := &Requirement{Slot: r.Str("slot", true, 1, 40)}
	if r.Err == nil && !ValidSlot(req.Slot) {
		r.Fail("slot", "must match ^[a-z0-9][a-z0-9-]{0,39}$")
	}
	if obj := r.Object("provider", true); obj != nil {
		s := r.Sub("provider", obj)
		s.Only("name", "homepageUrl", "docsUrl")
		req.Provider = Provider{
			Name:        s.Str("name", true, 1, MaxProviderNameChars),
			HomepageURL: httpsURL(s, "homepageUrl"),
			DocsURL:     httpsURL(s, "docsUrl"),
		}
		if s.Err == nil && !isPrintableASCII(req.Provider.Name) {
			s.Fail("name", "must be printable ASCII (a guard against look-alike characters; it does not catch ASCII look-alikes such as 5potify)")
		}
		r.Adopt(s)
	}
	req.Kind = Kind(r.Enum("kind", kinds...))
	if items := r.Array("fields", false); items != nil {
		if len(items) < 1 || len(items) > MaxFields {
			r.Fail("fields", "must hold 1 to "+strconv.Itoa(MaxFields)+" fields")
		}
		for i, item := range items {
			req.Fields = append(req.Fields, field(r, "fields["+strconv.Itoa(i)+"]", item))
		}
	}
	if obj := r.Object("registration", false); obj != nil {
		s := r.Sub("registration", obj)
		s.Only("consoleUrl", "instructions")
		reg := &Registration{ConsoleURL: httpsURL(s, "consoleUrl")}
		if items := s.Array("instructions", false); items != nil {
			if len(items) > MaxInstructions {
				s.Fail("instructions", "must hold at most "+strconv.Itoa(MaxInstructions)+" steps")
			}
			reg.Instructions = make([]string, 0, len(items))
			for i, item := range items {
				text, ok := jsonread.String(item)
				if n := jsonread.Chars(text); !ok || n < 1 || n > MaxInstructionChars {
					s.Fail("instructions["+strconv.Itoa(i)+"]", "must be a step of 1 to "+strconv.Itoa(MaxInstructionChars)+" characters")
					break
				}
				reg.Instructions = append(reg.Instructions, text)
			}
		}
		r.Adopt(s)
		req.Registration = reg
	}
	if obj := r.Object("endpoints", false); obj != nil {
		s := r.Sub("endpoints", obj)
		s.Only("authorizeUrl", "tokenUrl", "refreshUrl", "revokeUrl")
		req.Endpoints = &Endpoints{
			AuthorizeURL: httpsURL(s, "authorizeUrl"), TokenURL: httpsURL(s, "tokenUrl"),
			RefreshURL: httpsURL(s, "refreshUrl"), RevokeURL: httpsURL(s, "revokeUrl"),
		}
		r.Adopt(s)
	}
	if items := r.Array("scopes", false); items != nil {
		if len(items) > MaxScopes {
			r.Fail("scopes", "must hold at most "+strconv.Itoa(MaxScopes)+" scopes")
		}
		req.Scopes = make([]string, 0, len(items))
		for i, item := range items {
			s, ok := jsonread.String(item)
			if !ok || jsonread.Chars(s) > MaxScopeChars {
				r.Fail("scopes["+strconv.Itoa(i)+"]", "must be a string of at most "+strconv.Itoa(MaxScopeChars)+" characters")
				break
			}
			req.Scopes = append(req.Scopes, s)
		}
	}
	if _, ok := r.Raw("pkce"); ok {
		v := r.Bool("pkce", false)
		req.PKCE = &v
	}
	if obj := r.Object("authorizeParams", false); obj != nil {
		req.AuthorizeParams = stringMap(r, "authorizeParams", obj, MaxAuthorizeParams, func(name string) bool {
			n := jsonread.Chars(name)
			return n >= 1 && n <= MaxAuthorizeParamName
		}, 0, MaxAuthorizeParamValue)
	}
	if obj := r.Object("request", false); obj != nil {
		s := r.Sub("request", obj)
		s.Only("headerTemplate", "queryTemplate")
		t := &Templates{}
		if o := s.Object("headerTemplate", false); o != nil {
			t.Header = stringMap(s, "headerTemplate", o, MaxTemplateEntries, headerNameRule.MatchString, 1, MaxTemplateValueChars)
		}
		if o := s.Object("queryTemplate", false); o != nil {
			t.Query = stringMap(s, "queryTemplate", o, MaxTemplateEntries, queryNameRule.MatchString, 1, MaxTemplateValueChars)
		}
		r.Adopt(s)
		req.Request = t
	}
	if obj := r.Object("lanHost", false); obj != nil {
		s := r.Sub("lanHost", obj)
		s.Only("class", "label")
		req.LANHost = &LANHost{Class: s.Enum("class", LANClass), Label: s.Str("label", true, 1, MaxLabelChars)}
		r.Adopt(s)
	}
	if items := r.Array("declaredApiHosts", false); items != nil {
		req.DeclaredAPIHosts = make([]string, 0, len(items))
		for i, item := range items {
			name := "declaredApiHosts[" + strconv.Itoa(i) + "]"
			h, ok := jsonread.String(item)
			if n := jsonread.Chars(h); !ok || n < 1 || n > MaxHostChars {
				r.Fail(name, "must be a host name of 1 to "+strconv.Itoa(MaxHostChars)+" characters")
				break
			}
			canon, err := NormalizeHost(h)
			if err != nil || !hostRule.MatchString(canon) {
				r.Fail(name, "must be a bare host name (no scheme, port, path or credentials)")
				break
			}
			req.DeclaredAPIHosts = append(req.DeclaredAPIHosts, canon)
		}
	}
	if obj := r.Object("testRequest", false); obj != nil {
		s := r.Sub("testRequest", obj)
		s.Only("method", "pathAndQuery")
		req.TestRequest = &TestRequest{Method: s.Enum("method", "GET"), PathAndQuery: s.Str("pathAndQuery", true, 1, MaxTestPathChars)}
		if s.Err == nil && (!strings.HasPrefix(req.TestRequest.PathAndQuery, "/") || strings.HasPrefix(req.TestRequest.PathAndQuery, "//")) {
			s.Fail("pathAndQuery", "must be a path starting with a single /")
		}
		r.Adopt(s)
	}
	return req
}

func field(r *jsonread.Reader, name string, raw json.RawMessage) Field {
	obj, ok := jsonread.Object(raw)
	if !ok {
		r.Fail(name, "must be an object")
		return Field{}
	}
	s := r.Sub(name, obj)
	s.Only("key", "label", "type", "description", "placeholder", "required")
	f := Field{
		Key:         s.Str("key", true, 1, 40),
		Label:       s.Str("label", true, 1, MaxLabelChars),
		Type:        s.Enum("type", "text", "secret", "password", "url"),
		Description: s.Str("description", false, 0, MaxDescriptionChars),
		Placeholder: s.Str("placeholder", false, 0, MaxPlaceholderChars),
	}
	if s.Err == nil && !fieldKeyRule.MatchString(f.Key) {
		s.Fail("key", "must match ^[a-z0-9_]{1,40}$")
	}
	if _, ok := s.Raw("required"); ok {
		v := s.Bool("required", false)
		f.Required = &v
	}
	r.Adopt(s)
	return f
}

// httpsURL reads an optional https URL of at most MaxURLChars, with a host
// and no userinfo.
func httpsURL(r *jsonread.Reader, key string) string {
	s := r.Str(key, false, 1, MaxURLChars)
	if r.Err != nil || s == "" {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Opaque != "" {
		r.Fail(key, "must be an https URL with a host and no credentials")
		return ""
	}
	if _, err := NormalizeHost(u.Hostname()); err != nil {
		r.Fail(key, "has an invalid host")
	}
	return s
}

// stringMap reads an object of string values, its names accepted by
// validName, at most max entries, values of min–maxValue characters.
func stringMap(r *jsonread.Reader, key string, obj jsonread.Members, max int, validName func(string) bool, min, maxValue int) map[string]string {
	s := r.Sub(key, obj)
	if len(obj) > max {
		s.Fail("", "must hold at most "+strconv.Itoa(max)+" entries")
	}
	out := make(map[string]string, len(obj))
	for _, name := range s.Names() {
		if !validName(name) {
			s.Fail(strconv.Quote(name), "is not an allowed name")
			break
		}
		out[name] = s.Str(name, true, min, maxValue)
	}
	r.Adopt(s)
	return out
}

// check applies the rules past the schema bounds: the kind rules, unique
// field keys, the host XOR, the template lint, the credential scan and the
// loopback rule.
func (r *Requirement) check() error {
	fail := func(field, reason string) error { return &Error{Field: field, Reason: reason} }
	keys := r.FieldKeys()
	for i, k := range keys {
		if slices.Contains(keys[:i], k) {
			return fail("fields["+strconv.Itoa(i)+"].key", "repeats "+strconv.Quote(k))
		}
	}
	switch r.Kind {
	case KindNone:
		if r.Fields != nil {
			return fail("fields", "must be absent: kind none declares no credentials")
		}
		if r.Request != nil {
			return fail("request", "must be absent: kind none has no credential to inject")
		}
	case KindLinkedDevice:
		if len(r.Fields) == 0 {
			return fail("fields", "must declare at least one field for kind linked_device")
		}
		if r.Endpoints != nil {
			return fail("endpoints", "must be absent for kind linked_device")
		}
		if r.LANHost != nil {
			return fail("lanHost", "must be absent for kind linked_device")
		}
	case KindAPIKey, KindBearerToken:
		if len(r.Fields) == 0 {
			return fail("fields", "must declare the credential field")
		}
	case KindBasicAuth:
		if len(r.Fields) < 2 && r.Request == nil {
			return fail("fields", "must declare the user and password fields")
		}
	case KindOAuthClientCreds:
		if r.Endpoints == nil || r.Endpoints.TokenURL == "" {
			return fail("endpoints.tokenUrl", "is required for kind oauth2_client_creds")
		}
	case KindOAuthAuthCode:
		if r.Endpoints == nil || r.Endpoints.TokenURL == "" || r.Endpoints.AuthorizeURL == "" {
			return fail("endpoints", "must give authorizeUrl and tokenUrl for kind oauth2_auth_code")
		}
	}
	if r.Kind.OAuth() && !slices.Contains(keys, "client_id") {
		return fail("fields", `must declare "client_id" for an OAuth kind`)
	}
	// Hosts: exactly one source. Without lanHost, 1–32 declared hosts; with
	// it, none (before the address is collected) or the one collected
	// RFC 1918 IPv4 literal.
	hosts := r.DeclaredAPIHosts
	if r.LANHost == nil {
		if len(hosts) < 1 || len(hosts) > MaxHosts {
			return fail("declaredApiHosts", "must hold 1 to "+strconv.Itoa(MaxHosts)+" hosts")
		}
	} else if hosts != nil && (len(hosts) != 1 || !IsLANLiteral(hosts[0])) {
		return fail("declaredApiHosts", "must be absent, or the one RFC 1918 IPv4 address collected for lanHost")
	}
	for _, h := range r.Ceiling() {
		if ssrf.LoopbackHost(h) {
			return fail("declaredApiHosts", "may not hold this machine ("+h+"): a ceiling never includes loopback")
		}
	}
	if r.Request != nil {
		for _, t := range []struct {
			name string
			m    map[string]string
		}{{"request.headerTemplate", r.Request.Header}, {"request.queryTemplate", r.Request.Query}} {
			if issues := Lint(t.m, keys); len(issues) > 0 {
				return fail(t.name+"."+issues[0].Name, issues[0].Message)
			}
		}
	}
	if path, reason := r.credentialShaped(); path != "" {
		return fail(path, "holds a credential-shaped value ("+reason+"): a requirement is credential-free; credentials are typed by the user in the connect flow")
	}
	return nil
}

// IsLANLiteral reports whether host is an RFC 1918 IPv4 literal in dotted
// decimal: 10/8, 172.16/12 or 192.168/16.
func IsLANLiteral(host string) bool {
	canon, err := ssrf.CanonicalHost(host)
	if err != nil || canon != host {
		return false
	}
	parts := strings.Split(host, ".")
	if len(parts) != 4 {
		return false
	}
	a, _ := strconv.Atoi(parts[0])
	b, _ := strconv.Atoi(parts[1])
	return a == 10 || (a == 172 && b >= 16 && b <= 31) || (a == 192 && b == 168)
}
