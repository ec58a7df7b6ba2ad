package conn

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Helpers are the five template helpers (§12.8); no other exists.
var Helpers = []string{"timestamp", "base64", "hmac_sha256", "hmac_sha256_b64", "cdp_jwt"}

// RequestTokens are the request facts a template may name.
var RequestTokens = []string{"request.method", "request.url", "request.pathAndQuery", "request.body", "request.timestamp"}

var arity = map[string][2]int{
	"timestamp":       {0, 0},
	"base64":          {1, 1},
	"hmac_sha256":     {2, 2},
	"hmac_sha256_b64": {2, 6},
	"cdp_jwt":         {2, 2},
}

var helperCall = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)\((.*)\)$`)

// Issue is one lint finding: the template entry Name, its {{…}}
// expression, and what is wrong with it.
type Issue struct {
	Name       string
	Expression string
	Message    string
}

// Lint checks a header or query template against the declared field keys:
// every {{…}} must be a declared field, a request token, or one of the
// five helpers with its arity, whose arguments are declared fields, request
// tokens or quoted literals (cdp_jwt: declared fields only). Nesting is not
// a grammar: an argument that is itself a call is refused. This closes the
// engine's "an unknown token is a literal" fallback: a typo such as
// api_secrt fails here, before any credential is read.
func Lint(template map[string]string, fieldKeys []string) []Issue {
	var issues []Issue
	for _, name := range sortedNames(template) {
		for _, m := range placeholder.FindAllStringSubmatch(template[name], -1) {
			expr := strings.TrimSpace(m[1])
			if msg := lintExpression(expr, fieldKeys); msg != "" {
				issues = append(issues, Issue{Name: name, Expression: expr, Message: msg})
			}
		}
	}
	return issues
}

func lintExpression(expr string, keys []string) string {
	if m := helperCall.FindStringSubmatch(expr); m != nil {
		name := m[1]
		ar, ok := arity[name]
		if !ok {
			return fmt.Sprintf("uses the unknown helper %q (the helpers are %s)", name, strings.Join(Helpers, ", "))
		}
		args := splitArgs(m[2])
		if len(args) < ar[0] || len(args) > ar[1] {
			want := strconv.Itoa(ar[0])
			if ar[0] != ar[1] {
				want += " to " + strconv.Itoa(ar[1])
			}
			return fmt.Sprintf("calls %s with %d arguments; it takes %s", name, len(args), want)
		}
		for _, a := range args {
			switch {
			case name == "cdp_jwt" && (a.quoted || !slices.Contains(keys, a.text)):
				return fmt.Sprintf("passes %q to cdp_jwt, which takes two declared field keys", a.text)
			case a.quoted, slices.Contains(keys, a.text), slices.Contains(RequestTokens, a.text):
			default:
				return fmt.Sprintf("passes %q to %s: not a declared field, a request token or a quoted literal", a.text, name)
			}
		}
		return ""
	}
	if slices.Contains(keys, expr) || slices.Contains(RequestTokens, expr) {
		return ""
	}
	return fmt.Sprintf("names %q, which is not a declared field or a request token", expr)
}

type arg struct {
	text   string
	quoted bool
}

// splitArgs splits a helper's argument list on commas outside quotes; a
// backslash escapes the next character; an argument that had quotes is a
// literal.
func splitArgs(list string) []arg {
	list = strings.TrimSpace(list)
	if list == "" {
		return nil
	}
	var out []arg
	var cur strings.Builder
	quoted, single, double, escape := false, false, false, false
	push := func() {
		out = append(out, arg{strings.TrimSpace(cur.String()), quoted})
		cur.Reset()
		quoted = false
	}
	for _, c := range list {
		switch {
		case escape:
			cur.WriteRune(c)
			escape = false
		case c == '\\':
			escape = true
		case c == '\'' && !double:
			single, quoted = !single, true
		case c == '"' && !single:
			double, quoted = !double, true
		case c == ',' && !single && !double:
			push()
		default:
			cur.WriteRune(c)
		}
	}
	push()
	return out
}

// RenderInput is what a render pass reads: the credential values, the
// declared field keys (a declared field without a value renders empty),
// the request, and the clock.
type RenderInput struct {
	Fields   map[string]string
	Declared []string
	Method   string
	URL      string // the app's URL, before any query credential
	Body     string
	Now      func() time.Time
}

// ErrTemplate: a template cannot be rendered (it breaks the lint, or a
// helper refused its input). The message names structure, never a value.
var ErrTemplate = errors.New("template")

// Render renders the header and query templates in one pass, sharing one
// timestamp (request.timestamp and timestamp() are the same second
// everywhere in the pass, so a signature recomputed from the sent
// timestamp matches). Both are linted first against the declared keys.
func Render(t *Templates, in RenderInput) (headers, query map[string]string, err error) {
	headers, query = map[string]string{}, map[string]string{}
	if t == nil {
		return headers, query, nil
	}
	for _, m := range []map[string]string{t.Header, t.Query} {
		if issues := Lint(m, in.Declared); len(issues) > 0 {
			return nil, nil, fmt.Errorf("%w: %s %s", ErrTemplate, issues[0].Name, issues[0].Message)
		}
	}
	pass := &renderPass{in: in}
	for _, pair := range []struct {
		src map[string]string
		dst map[string]string
	}{{t.Header, headers}, {t.Query, query}} {
		for _, name := range sortedNames(pair.src) {
			v, err := pass.render(pair.src[name])
			if err != nil {
				return nil, nil, err
			}
			pair.dst[name] = v
		}
	}
	return headers, query, nil
}

type renderPass struct {
	in  RenderInput
	now string // the memoised timestamp
}

func (p *renderPass) timestamp() string {
	if p.now == "" {
		clock := p.in.Now
		if clock == nil {
			clock = time.Now
		}
		p.now = strconv.FormatInt(clock().Unix(), 10)
	}
	return p.now
}

func (p *renderPass) render(tmpl string) (string, error) {
	var b strings.Builder
	last := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(tmpl, -1) {
		b.WriteString(tmpl[last:m[0]])
		v, err := p.expression(strings.TrimSpace(tmpl[m[2]:m[3]]))
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		last = m[1]
	}
	b.WriteString(tmpl[last:])
	return b.String(), nil
}

func (p *renderPass) expression(expr string) (string, error) {
	if m := helperCall.FindStringSubmatch(expr); m != nil {
		var args []string
		for _, a := range splitArgs(m[2]) {
			args = append(args, p.argument(a))
		}
		return p.helper(m[1], args)
	}
	return p.argument(arg{text: expr}), nil
}

// argument resolves a bare token: a quoted literal verbatim (never looked
// up, so {{base64('api_key')}} cannot reach the credential), a request
// token, a field (a declared one without a value is empty). The lint has
// already refused anything else.
func (p *renderPass) argument(a arg) string {
	switch {
	case a.quoted:
		return a.text
	case strings.HasPrefix(a.text, "request."):
		return p.requestToken(a.text)
	}
	return p.in.Fields[a.text]
}

func (p *renderPass) requestToken(tok string) string {
	switch tok {
	case "request.timestamp":
		return p.timestamp()
	case "request.method":
		return p.in.Method
	case "request.url":
		return p.in.URL
	case "request.body":
		return p.in.Body
	case "request.pathAndQuery":
		if u, err := url.Parse(p.in.URL); err == nil {
			return u.RequestURI()
		}
	}
	return ""
}

func (p *renderPass) helper(name string, args []string) (string, error) {
	switch name {
	case "timestamp":
		return p.timestamp(), nil
	case "base64":
		return base64.StdEncoding.EncodeToString([]byte(args[0])), nil
	case "hmac_sha256":
		m := hmac.New(sha256.New, []byte(args[0]))
		m.Write([]byte(args[1]))
		return hex.EncodeToString(m.Sum(nil)), nil
	case "hmac_sha256_b64":
		key, err := base64.StdEncoding.DecodeString(args[0])
		if err != nil {
			return "", fmt.Errorf("%w: hmac_sha256_b64's key must be standard base64", ErrTemplate)
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(strings.Join(args[1:], "")))
		return base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
	case "cdp_jwt":
		return p.cdpJWT(args[0], args[1])
	}
	return "", fmt.Errorf("%w: unknown helper %s", ErrTemplate, name)
}

// cdpJWT mints a Coinbase CDP JWT, signed with Ed25519 (the reference's
// current choice; its earlier ES256 is gone): header {alg EdDSA, kid, typ,
// nonce}, claims {iss cdp, sub, uri "METHOD host/path", nbf, exp nbf+120}.
func (p *renderPass) cdpJWT(keyName, secret string) (string, error) {
	if keyName == "" || secret == "" {
		return "", fmt.Errorf("%w: cdp_jwt needs both of its fields to have values", ErrTemplate)
	}
	key, err := ed25519Key(secret)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(p.in.URL)
	if err != nil {
		return "", fmt.Errorf("%w: cdp_jwt cannot read the request URL", ErrTemplate)
	}
	nonce := make([]byte, 16)
	rand.Read(nonce)
	nbf, _ := strconv.ParseInt(p.timestamp(), 10, 64)
	header, _ := json.Marshal(struct {
		Alg   string `json:"alg"`
		Kid   string `json:"kid"`
		Typ   string `json:"typ"`
		Nonce string `json:"nonce"`
	}{"EdDSA", keyName, "JWT", hex.EncodeToString(nonce)})
	claims, _ := json.Marshal(struct {
		Iss string `json:"iss"`
		Sub string `json:"sub"`
		URI string `json:"uri"`
		Nbf int64  `json:"nbf"`
		Exp int64  `json:"exp"`
	}{"cdp", keyName, p.in.Method + " " + u.Host + u.EscapedPath(), nbf, nbf + 120})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	return input + "." + enc.EncodeToString(ed25519.Sign(key, []byte(input))), nil
}

// ed25519Key reads an Ed25519 private key: PKCS #8 PEM, or base64 of the
// 32-byte seed or the 64-byte seed-and-public-key form.
func ed25519Key(s string) (ed25519.PrivateKey, error) {
	bad := fmt.Errorf("%w: cdp_jwt's key is not an Ed25519 private key", ErrTemplate)
	if block, _ := pem.Decode([]byte(strings.TrimSpace(s))); block != nil {
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if key, ok := k.(ed25519.PrivateKey); err == nil && ok {
			return key, nil
		}
		return nil, bad
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	switch {
	case err != nil:
		return nil, bad
	case len(raw) == ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case len(raw) == ed25519.PrivateKeySize:
		key := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if !hmac.Equal(key, raw) {
			return nil, bad
		}
		return key, nil
	}
	return nil, bad
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
