package userdb

import (
	"regexp"
	"strings"
	"testing"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteComplete is SQLite's own sqlite3_complete, the oracle for
// countStatements' walk.
func sqliteComplete(t *testing.T, s string) bool {
	tls := libc.NewTLS()
	defer tls.Close()
	p, err := libc.CString(s)
	if err != nil {
		t.Fatal(err)
	}
	defer libc.Xfree(tls, p)
	return sqlite3.Xsqlite3_complete(tls, p) != 0
}

var statementSeeds = []string{
	"", ";", "SELECT 1", "SELECT 1;", "SELECT 1; SELECT 2", "SELECT ';'", `SELECT "a;b"`, "SELECT [x;y]", "SELECT `q;`",
	"-- c\nSELECT 1;", "/* ; */ SELECT 1;", "/* open", "SELECT 'open", "SELECT 1; -- tail",
	"CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; SELECT 2; END;",
	"CREATE TEMP TRIGGER t AFTER INSERT ON x BEGIN UPDATE x SET a = CASE WHEN 1 THEN 2 END; END; SELECT 3;",
	"EXPLAIN CREATE TRIGGER t BEGIN SELECT 1; END;", "create temporary trigger x begin ; end ;", "$end; end;",
	"CREATE TABLE t(a); CREATE TRIGGER q", "SELECT 1 -- no newline",
}

// FuzzStatementWalk checks the walk against sqlite3_complete on every
// input, and that countStatements agrees with splitting at each ";" that
// completes a statement.
func FuzzStatementWalk(f *testing.F) {
	for _, s := range statementSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return // C strings end at NUL; Exec refuses NUL
		}
		if got, want := complete(s), sqliteComplete(t, s); got != want {
			t.Fatalf("complete(%q) = %v, sqlite3_complete says %v", s, got, want)
		}
		// Every statement countStatements counts ends where SQLite's
		// prefix test first says complete.
		n, ends := 0, 0
		for i := 0; i < len(s); i++ {
			if s[i] == ';' && sqliteComplete(t, s[ends:i+1]) {
				if countStatements(s[ends:i+1]) > 0 {
					n++
				}
				ends = i + 1
			}
		}
		if countStatements(s[ends:]) > 0 {
			n++
		}
		if got := countStatements(s); got != n {
			t.Fatalf("countStatements(%q) = %d, want %d", s, got, n)
		}
	})
}

var tokenForm = regexp.MustCompile(`^([0-9a-f]{32}|x([0-9a-f]{2})*)$`)

var nameRule = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,40}$`)

// FuzzValidObjectName checks the rule's properties: a valid name is
// snug_kv or matches the pattern without a reserved prefix in any case, and
// it never holds anything that needs quoting.
func FuzzValidObjectName(f *testing.F) {
	for _, s := range []string{"trades", "snug_kv", "Snug_kv2", "APP_x", "sqlite_master", `a"b`, strings.Repeat("a", 41), strings.Repeat("a", 42), "1x", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ValidObjectName(s)
		lower := strings.ToLower(s)
		want := s == "snug_kv" || nameRule.MatchString(s) &&
			!strings.HasPrefix(lower, "snug_") && !strings.HasPrefix(lower, "sqlite_") && !strings.HasPrefix(lower, "app_")
		if got != want {
			t.Fatalf("ValidObjectName(%q) = %v", s, got)
		}
		if got && (strings.ContainsAny(s, "\"'`[]; \x00") || len(s) > 41) {
			t.Fatalf("%q is valid but unsafe", s)
		}
	})
}

// FuzzAppDataToken checks that the token is a safe identifier part and
// that two namespaces share a token only when they are one UUID in two
// cases.
func FuzzAppDataToken(f *testing.F) {
	f.Add("A7F3B2C1-0D4E-4F5A-8B6C-9D0E1F2A3B4C", "a7f3b2c1-0d4e-4f5a-8b6c-9d0e1f2a3b4c")
	f.Add("starter--chess", "x")
	f.Add("", "x")
	f.Add("a7f3b2c10d4e4f5a8b6c9d0e1f2a3b4c", "xa7")
	f.Fuzz(func(t *testing.T, a, b string) {
		ta, tb := AppDataToken(a), AppDataToken(b)
		for _, tok := range []string{ta, tb} {
			if !tokenForm.MatchString(tok) {
				t.Fatalf("token %q is neither 32 hex digits nor x and hex", tok)
			}
		}
		same := a == b || isUUID(a) && isUUID(b) && strings.EqualFold(a, b)
		if (ta == tb) != same {
			t.Fatalf("AppDataToken(%q) = %q, AppDataToken(%q) = %q", a, ta, b, tb)
		}
	})
}
