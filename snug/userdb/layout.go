package userdb

import (
	"encoding/hex"
	"regexp"
	"strings"
)

// KVTable is the key/value table the db-request ops kvGet and kvSet keep
// inside every app's database: the one exemption from the reserved
// prefixes. Its DDL is fixed (kvTableDDL), so every hub reads it alike.
const KVTable = "snug_kv"

const kvTableDDL = `CREATE TABLE IF NOT EXISTS snug_kv (key TEXT PRIMARY KEY, value TEXT)`

// kvTableSQL is how sqlite_master records kvTableDDL.
const kvTableSQL = `CREATE TABLE snug_kv (key TEXT PRIMARY KEY, value TEXT)`

// reservedPrefixes are refused at the start of an app object name,
// compared case-insensitively: snug_ and sqlite_ are the hub's and
// SQLite's, app_ would forge another app's at-rest name.
var reservedPrefixes = []string{"snug_", "sqlite_", "app_"}

var objectNameRule = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,40}$`)

// ValidObjectName reports whether an app may persist an object (table,
// index, trigger or view) named name: 1–41 characters of
// [A-Za-z][A-Za-z0-9_]*, not starting with snug_, sqlite_ or app_ in any
// case, except exactly "snug_kv". A name that passes is safe to quote into
// SQL; a name that fails is never put into SQL at all.
func ValidObjectName(name string) bool {
	if name == KVTable {
		return true
	}
	if !objectNameRule.MatchString(name) {
		return false
	}
	lower := strings.ToLower(name)
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(lower, p) {
			return false
		}
	}
	return true
}

// AppDataToken is the spec's normative appDataToken(namespace): a
// UUID-shaped namespace (8-4-4-4-12 hex digits, any case) gives its 32 hex
// digits in lower case; anything else gives "x" and the lower-case hex of
// its UTF-8 bytes. It is total and injective: "x" is outside the hex
// alphabet, so the two forms never meet.
func AppDataToken(namespace string) string {
	if isUUID(namespace) {
		return strings.ToLower(strings.ReplaceAll(namespace, "-", ""))
	}
	return "x" + hex.EncodeToString([]byte(namespace))
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// RestTableName is the at-rest name of app table name: app_<token>__<name>.
// The caller checks name with [ValidObjectName] first.
func RestTableName(token, name string) string {
	return restPrefix(token) + name
}

// restPrefix starts every at-rest table of the app with that token. Tokens
// have no "_", so one app's prefix is never a prefix of another's names.
func restPrefix(token string) string { return "app_" + token + "__" }

// quoteIdent quotes an identifier for SQL. Names built from app input have
// passed ValidObjectName before they get here; the escaping is a second
// line of defence.
func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
