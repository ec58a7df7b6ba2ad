package appdb_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/dsh-browser/broker/snug/appdb"
)

// BenchmarkExec compares one exec request (materialise the app's database,
// run the statement, write back to the user file) with the same statement
// run directly on a plain SQLite file (synchronous=FULL, autocommit), for a
// table of 1,000 rows of about 100 bytes.
func BenchmarkExec(b *testing.B) {
	const setup = "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, note TEXT)"
	const fill = "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1000) INSERT INTO t (n, note) SELECT i, printf('%.100c', 'x') FROM s"
	cases := []struct{ name, sql string }{
		{"write", "UPDATE t SET n = n + 1 WHERE id = 500"},
		{"read", "SELECT n, note FROM t WHERE id = 500"},
	}
	for _, c := range cases {
		b.Run(c.name+"/hub", func(b *testing.B) {
			db, id := mustSetup(b)
			in := appdb.NewInstance(db, id)
			for _, q := range []string{setup, fill} {
				if r := in.Handle(ctx, appdb.Request{V: 1, Type: appdb.RequestType, RequestID: "s", Op: "exec", SQL: q}); !r.OK {
					b.Fatal(r.Error)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if r := in.Handle(ctx, appdb.Request{V: 1, Type: appdb.RequestType, RequestID: "x", Op: "exec", SQL: c.sql}); !r.OK {
					b.Fatal(r.Error)
				}
			}
		})
		b.Run(c.name+"/plain", func(b *testing.B) {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "plain.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			for _, q := range []string{"PRAGMA synchronous = FULL", setup, fill} {
				if _, err := db.Exec(q); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				rows, err := db.Query(c.sql)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				rows.Close()
			}
		})
	}
}
