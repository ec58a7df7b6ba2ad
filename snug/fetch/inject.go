package fetch

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/frame"
)

// injection is what gate 8 attaches: headers, query parameters (joined to
// the outbound URL only, after every check), and the values to scrub.
type injection struct {
	headers map[string]string
	query   map[string]string
	scrub   scrubber
	used    bool
}

// inject reads the connection's credentials (never cached: every request
// reads them again) and renders them per the connection's kind.
func (e *Executor) inject(ctx context.Context, t *target, force bool) (injection, *Error) {
	inj := injection{headers: map[string]string{}, query: map[string]string{}}
	if !conn.InCeiling(t.host, t.row.AllowedHosts()) { // the ceiling, checked again where credentials move
		return inj, fail(frame.CodeNetNotApproved, "no approved connection covers this request")
	}
	req := t.req
	switch {
	case req.Kind == conn.KindNone:
		return inj, nil
	case req.Kind.OAuth():
		token, secrets, ferr := e.accessToken(ctx, t, force)
		if ferr != nil {
			return inj, ferr
		}
		inj.headers["Authorization"] = "Bearer " + token
		inj.scrub = append(secrets, "Bearer "+token)
		inj.used = true
		return inj, nil
	}
	fields := map[string]string{}
	for _, f := range req.Fields {
		v, ok, err := e.store.Secret(ctx, conn.CredentialKey(t.appID, t.row.Slot, f.Key))
		if err != nil {
			return inj, hostError(err)
		}
		if !ok || v == "" {
			if f.IsRequired() {
				return inj, fail(frame.CodeNetAuthFailed, "the credential %q (%s) is missing: connect this app first", f.Key, f.Label)
			}
			continue
		}
		fields[f.Key] = v
	}
	if tm := req.Request; tm != nil && (tm.Header != nil || tm.Query != nil) {
		body := ""
		if t.body != nil {
			body = *t.body
		}
		h, q, err := conn.Render(tm, conn.RenderInput{Fields: fields, Declared: req.FieldKeys(), Method: t.method,
			URL: t.url.String(), Body: body, Now: e.opts.Now})
		if err != nil {
			// The message names template structure, never a value.
			return inj, fail(frame.CodeNetAuthFailed, "the connection's credential template cannot be rendered: %s", strings.TrimPrefix(err.Error(), "template: "))
		}
		inj.headers, inj.query = h, q
	} else {
		first := func(i int) string {
			if i < len(req.Fields) {
				return fields[req.Fields[i].Key]
			}
			return ""
		}
		switch req.Kind {
		case conn.KindBasicAuth:
			inj.headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(first(0)+":"+first(1)))
		case conn.KindAPIKey:
			inj.headers["X-Api-Key"] = first(0)
		default: // bearer_token, linked_device
			inj.headers["Authorization"] = "Bearer " + first(0)
		}
	}
	for _, v := range inj.headers {
		inj.scrub = append(inj.scrub, v)
	}
	for _, v := range inj.query {
		inj.scrub = append(inj.scrub, v)
	}
	for _, v := range fields {
		inj.scrub = append(inj.scrub, v)
	}
	inj.used = len(inj.headers)+len(inj.query) > 0
	return inj, nil
}

// scrubber replaces the values a request injected, wherever they come
// back: each value, and the token of a reflected "Bearer x" or "Basic x",
// as exact text in which any character may also appear percent-encoded
// (%2D for -, either case; + or %20 for a space), so the raw,
// query-encoded, path-encoded and over-encoded spellings are all caught.
// Values under 4 characters are left (too likely to be ordinary text). A
// provider that re-encodes a value otherwise (base64, hex, split) is not
// caught: the ceiling is the wall, the scrub a second line, and it is
// described as no more than that.
type scrubber []string

var schemed = regexp.MustCompile(`(?i)^(Bearer|Basic|Token|Digest|Negotiate)\s+(.+)$`)

func (s scrubber) apply(text string) string { return s.compile()(text) }

// compile builds the scrub once for the several texts of one answer.
func (s scrubber) compile() func(string) string {
	var values []string
	for _, v := range s {
		values = append(values, v)
		if m := schemed.FindStringSubmatch(v); m != nil {
			values = append(values, m[2])
		}
	}
	// Longest first, so a value is never left half-replaced by a shorter
	// one inside it.
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	var res []*regexp.Regexp
	for _, v := range slices.Compact(values) {
		if utf8.RuneCountInString(v) >= conn.ScrubMinChars {
			res = append(res, encodedPattern(v))
		}
	}
	return func(text string) string {
		for _, re := range res {
			if text == "" {
				break
			}
			text = re.ReplaceAllLiteralString(text, "***")
		}
		return text
	}
}

// encodedPattern matches v with any of its characters percent-encoded
// (a character's UTF-8 bytes, each as %XX in either case).
func encodedPattern(v string) *regexp.Regexp {
	var b strings.Builder
	for _, r := range v {
		b.WriteString("(?:")
		b.WriteString(regexp.QuoteMeta(string(r)))
		b.WriteString("|")
		for _, c := range []byte(string(r)) {
			fmt.Fprintf(&b, "%%(?i:%02x)", c)
		}
		if r == ' ' {
			b.WriteString(`|\+`)
		}
		b.WriteString(")")
	}
	return regexp.MustCompile(b.String())
}
