package conn

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tree is the requirement as a JSON value: only the members present, the
// declared hosts in their normalised form.
func (r *Requirement) tree() map[string]any {
	t := map[string]any{"slot": r.Slot, "kind": string(r.Kind)}
	prov := map[string]any{"name": r.Provider.Name}
	setString(prov, "homepageUrl", r.Provider.HomepageURL)
	setString(prov, "docsUrl", r.Provider.DocsURL)
	t["provider"] = prov
	if r.Fields != nil {
		fields := make([]any, len(r.Fields))
		for i, f := range r.Fields {
			m := map[string]any{"key": f.Key, "label": f.Label, "type": f.Type}
			setString(m, "description", f.Description)
			setString(m, "placeholder", f.Placeholder)
			if f.Required != nil {
				m["required"] = *f.Required
			}
			fields[i] = m
		}
		t["fields"] = fields
	}
	if g := r.Registration; g != nil {
		m := map[string]any{}
		setString(m, "consoleUrl", g.ConsoleURL)
		if g.Instructions != nil {
			m["instructions"] = strings2any(g.Instructions)
		}
		t["registration"] = m
	}
	if e := r.Endpoints; e != nil {
		m := map[string]any{}
		setString(m, "authorizeUrl", e.AuthorizeURL)
		setString(m, "tokenUrl", e.TokenURL)
		setString(m, "refreshUrl", e.RefreshURL)
		setString(m, "revokeUrl", e.RevokeURL)
		t["endpoints"] = m
	}
	if r.Scopes != nil {
		t["scopes"] = strings2any(r.Scopes)
	}
	if r.PKCE != nil {
		t["pkce"] = *r.PKCE
	}
	if r.AuthorizeParams != nil {
		t["authorizeParams"] = map2any(r.AuthorizeParams)
	}
	if q := r.Request; q != nil {
		m := map[string]any{}
		if q.Header != nil {
			m["headerTemplate"] = map2any(q.Header)
		}
		if q.Query != nil {
			m["queryTemplate"] = map2any(q.Query)
		}
		t["request"] = m
	}
	if l := r.LANHost; l != nil {
		t["lanHost"] = map[string]any{"class": l.Class, "label": l.Label}
	}
	if r.DeclaredAPIHosts != nil {
		t["declaredApiHosts"] = strings2any(r.DeclaredAPIHosts)
	}
	if q := r.TestRequest; q != nil {
		t["testRequest"] = map[string]any{"method": q.Method, "pathAndQuery": q.PathAndQuery}
	}
	return t
}

func setString(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func strings2any(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func map2any(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Canonical returns the canonical form of any JSON text: object keys sorted
// at every level (by UTF-16 code units, as JavaScript sorts them), no
// whitespace, array order kept, strings escaped as JSON.stringify escapes
// them. ok is false when text is not JSON.
func Canonical(text []byte) (string, bool) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(text)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return "", false
	}
	return encodeCanonical(v), true
}

func encodeCanonical(v any) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		writeNumber(b, v)
	case string:
		writeString(b, v)
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, x)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, v[k])
		}
		b.WriteByte('}')
	}
}

// writeNumber writes a number as JavaScript prints it, for the integers and
// simple decimals a requirement could hold (it holds none today).
func writeNumber(b *strings.Builder, n json.Number) {
	f, err := n.Float64()
	if err != nil {
		b.WriteString("null")
		return
	}
	b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
}

// writeString escapes s as JSON.stringify does: ", \ and the C0 controls,
// nothing else (no HTML escaping, U+2028 left as is).
func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[r>>4])
				b.WriteByte("0123456789abcdef"[r&0xf])
			} else if r == utf8.RuneError {
				b.WriteString("\uFFFD")
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// compareUTF16 orders strings by UTF-16 code units, JavaScript's default
// sort.
func compareUTF16(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	for i := 0; i < len(ra) && i < len(rb); i++ {
		ua, ub := utf16Units(ra[i]), utf16Units(rb[i])
		for j := 0; j < len(ua) && j < len(ub); j++ {
			if ua[j] != ub[j] {
				return int(ua[j]) - int(ub[j])
			}
		}
		if len(ua) != len(ub) {
			return len(ua) - len(ub)
		}
	}
	return len(ra) - len(rb)
}

func utf16Units(r rune) []uint16 {
	if r < 0x10000 {
		return []uint16{uint16(r)}
	}
	r -= 0x10000
	return []uint16{uint16(0xd800 + r>>10), uint16(0xdc00 + r&0x3ff)}
}
