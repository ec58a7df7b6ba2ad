package conn

import "strings"

// ConnectionScheme is the scheme of connection-relative addresses (§15),
// matched case-insensitively.
const ConnectionScheme = "snug-connection:"

// ConnectionURL is a parsed snug-connection://<slot><pathAndQuery>.
type ConnectionURL struct {
	Slot         string
	PathAndQuery string // starts with one "/"
}

// ParseConnectionURL tells the three outcomes of §15: not a connection
// URL (ok false, malformed false: the URL goes on as a literal), malformed
// (refused loudly, never guessed at), or a slot and a path. The slot must
// be a valid slot; the path must start with "/" but not "//", and hold no
// backslash and no fragment.
func ParseConnectionURL(s string) (u ConnectionURL, ok, malformed bool) {
	if len(s) < len(ConnectionScheme) || !strings.EqualFold(s[:len(ConnectionScheme)], ConnectionScheme) {
		return ConnectionURL{}, false, false
	}
	rest, found := strings.CutPrefix(s[len(ConnectionScheme):], "//")
	if !found {
		return ConnectionURL{}, false, true
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return ConnectionURL{}, false, true
	}
	slot, path := rest[:i], rest[i:]
	if !ValidSlot(slot) || strings.HasPrefix(path, "//") || strings.ContainsAny(path, "\\#") {
		return ConnectionURL{}, false, true
	}
	return ConnectionURL{Slot: slot, PathAndQuery: path}, true, false
}
