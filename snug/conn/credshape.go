package conn

import (
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

var (
	jwtShape     = regexp.MustCompile(`^eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}$`)
	bearerPrefix = regexp.MustCompile(`(?i)^bearer\s+\S+`)
	placeholder  = regexp.MustCompile(`\{\{\s*([^}]+?)\s*\}\}`)
)

// CredentialShaped reports why a string looks like a credential value
// ("" when it does not): a Bearer prefix, a JWT, or a long, spaceless,
// mixed-class string of high entropy (the reference's heuristic, which
// passes prose, UUIDs and URLs' paths).
func CredentialShaped(s string) string {
	switch {
	case bearerPrefix.MatchString(s):
		return "a Bearer token"
	case jwtShape.MatchString(s):
		return "a JWT"
	case highEntropy(s):
		return "a high-entropy key"
	}
	return ""
}

func highEntropy(s string) bool {
	if len(s) < 32 || len(s) > 512 || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return false
	}
	classes := 0
	for _, has := range []func(rune) bool{
		func(r rune) bool { return r >= 'a' && r <= 'z' },
		func(r rune) bool { return r >= 'A' && r <= 'Z' },
		func(r rune) bool { return r >= '0' && r <= '9' },
		func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') },
	} {
		if strings.IndexFunc(s, has) >= 0 {
			classes++
		}
	}
	if classes < 3 {
		return false
	}
	counts := map[rune]int{}
	n := 0
	for _, r := range s {
		counts[r]++
		n++
	}
	entropy := 0.0
	for _, c := range counts {
		p := float64(c) / float64(n)
		entropy -= p * math.Log2(p)
	}
	return entropy > 4.2
}

// credentialShaped scans every string of the requirement and returns the
// path of the first credential-shaped one and why. Template values are
// scanned with their {{…}} placeholders taken out ("Bearer {{token}}" is a
// template, "Bearer sk-live-…" a credential); a URL by its query values.
func (r *Requirement) credentialShaped() (path, reason string) {
	var walk func(v any, path, key string) bool
	walk = func(v any, p, key string) bool {
		switch v := v.(type) {
		case string:
			s := v
			switch {
			case strings.HasSuffix(key, "Url"):
				return scanURL(s, p, &path, &reason)
			case strings.HasPrefix(p, "request."):
				s = placeholder.ReplaceAllString(s, "")
			}
			if why := CredentialShaped(s); why != "" {
				path, reason = p, why
				return true
			}
		case []any:
			for i, x := range v {
				if walk(x, p+"["+strconv.Itoa(i)+"]", "") {
					return true
				}
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				child := k
				if p != "" {
					child = p + "." + k
				}
				if walk(v[k], child, k) {
					return true
				}
			}
		}
		return false
	}
	walk(r.tree(), "", "")
	return path, reason
}

func scanURL(s, p string, path, reason *string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if why := CredentialShaped(v); why != "" {
				*path, *reason = p, why+" in its query"
				return true
			}
		}
	}
	return false
}
