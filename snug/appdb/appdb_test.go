package appdb_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dsh-browser/broker/protocol"
	"github.com/dsh-browser/broker/snug/appdb"
	"github.com/dsh-browser/broker/snug/userdb"
)

var ctx = context.Background()

func mustSetup(t testing.TB) (*userdb.DB, string) {
	t.Helper()
	db, err := userdb.Open(filepath.Join(t.TempDir(), userdb.FileName), userdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	app, err := db.Install(ctx, userdb.AppMeta{DisplayName: "T"}, "<html/>")
	if err != nil {
		t.Fatal(err)
	}
	return db, app.ID
}

var seq int

func req(op string, fields map[string]any) appdb.Request {
	seq++
	r := appdb.Request{V: 1, Type: appdb.RequestType, RequestID: fmt.Sprintf("r%d", seq), InstanceID: "i1", Op: op}
	b, _ := json.Marshal(fields)
	json.Unmarshal(b, &r)
	return r
}

// responseSchema is the published db-response.json (protocol/snug).
func responseSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	f, err := protocol.SnugSchemas.Open("snug/db-response.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AddResource("db-response.json", doc)
	s, err := c.Compile("db-response.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t testing.TB, s *jsonschema.Schema, r appdb.Response) {
	t.Helper()
	b, _ := json.Marshal(r)
	v, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err := s.Validate(v); err != nil {
		t.Fatalf("response %s does not match db-response.json: %v", b, err)
	}
}

func TestTheFiveOps(t *testing.T) {
	db, id := mustSetup(t)
	in := appdb.NewInstance(db, id)
	schema := responseSchema(t)
	do := func(r appdb.Request) appdb.Response {
		t.Helper()
		resp := in.Handle(ctx, r)
		validate(t, schema, resp)
		if resp.RequestID != r.RequestID || resp.V != 1 || resp.Type != appdb.ResponseType {
			t.Fatalf("envelope %+v", resp)
		}
		return resp
	}
	ok := func(r appdb.Request) appdb.Response {
		t.Helper()
		resp := do(r)
		if !resp.OK {
			t.Fatalf("%s: %+v", r.Op, resp.Error)
		}
		return resp
	}
	ok(req("exec", map[string]any{"sql": "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB, flag INTEGER)"}))
	r := ok(req("exec", map[string]any{"sql": "INSERT INTO t (name, score, data, flag) VALUES (?, ?, ?, ?)", "params": []any{"ann", 2.5, []int{1, 2, 255}, true}}))
	if r.Columns == nil || r.Rows == nil || len(r.Rows) != 0 {
		t.Fatalf("an insert answers empty columns and rows, present: %+v", r)
	}
	r = ok(req("exec", map[string]any{"sql": "SELECT id, name, score, data, flag, NULL AS n FROM t"}))
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"columns":["id","name","score","data","flag","n"],"rows":[[1,"ann",2.5,[1,2,255],1,null]]`) {
		t.Fatalf("select answered %s", b)
	}
	if r := do(req("kvGet", map[string]any{"key": "missing"})); !r.OK || r.Value != nil {
		t.Fatalf("kvGet of a missing key: %+v", r)
	}
	ok(req("kvSet", map[string]any{"key": "state", "value": map[string]any{"score": 42}}))
	if r := ok(req("kvGet", map[string]any{"key": "state"})); string(r.Value) != `{"score":42}` {
		t.Fatalf("kvGet: %s", r.Value)
	}
	ok(req("kvSet", map[string]any{"key": "nothing", "value": nil}))
	if r := ok(req("kvGet", map[string]any{"key": "nothing"})); string(r.Value) != "null" {
		t.Fatalf("a stored null: %q", r.Value)
	}
	exp := ok(req("export", nil))
	image, err := base64.StdEncoding.DecodeString(exp.BytesBase64)
	if err != nil || !strings.HasPrefix(string(image), "SQLite format 3\x00") {
		t.Fatalf("export: %v", err)
	}
	ok(req("exec", map[string]any{"sql": "DROP TABLE t"}))
	ok(req("import", map[string]any{"bytesBase64": exp.BytesBase64}))
	if r := ok(req("exec", map[string]any{"sql": "SELECT name FROM t"})); !reflect.DeepEqual(r.Rows, [][]any{{"ann"}}) {
		t.Fatalf("after import: %v", r.Rows)
	}
	// Errors carry the spec's codes.
	for _, c := range []struct {
		r    appdb.Request
		code string
	}{
		{req("exec", map[string]any{"sql": "SELECT * FROM nowhere"}), "DB_SQL_ERROR"},
		{req("exec", map[string]any{"sql": "SELECT 1; SELECT 2"}), "DB_MULTI_STATEMENT"},
		{req("exec", map[string]any{"sql": "ATTACH 'x' AS y"}), "DB_FORBIDDEN_STATEMENT"},
		{req("exec", map[string]any{"sql": "SELECT ?", "params": []any{map[string]any{"a": 1}}}), "DB_SQL_ERROR"},
		{req("exec", map[string]any{"sql": `CREATE TABLE "bad-name" (x)`}), "USERDB_INVALID_NAME"},
		{req("import", map[string]any{"bytesBase64": base64.StdEncoding.EncodeToString([]byte("nope"))}), "DB_BAD_IMPORT"},
		{req("import", map[string]any{"bytesBase64": "!!!"}), "DB_BAD_IMPORT"},
		{req("drop", nil), "HOST_ERROR"},
	} {
		r := do(c.r)
		if r.OK || r.Error.Code != c.code || r.Error.Retryable {
			t.Errorf("%s %s: %+v, want %s", c.r.Op, c.r.SQL, r.Error, c.code)
		}
	}
}

func TestNinthRequestInFlightIsRefused(t *testing.T) {
	db, id := mustSetup(t)
	in := appdb.NewInstance(db, id)
	// Hold the app's lock so the first requests wait inside Handle.
	rt, err := db.Materialise(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]appdb.Response, appdb.MaxInFlight)
	for i := range appdb.MaxInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = in.Handle(ctx, appdb.Request{V: 1, Type: appdb.RequestType, RequestID: fmt.Sprintf("q%d", i), Op: "exec", SQL: "SELECT 1"})
		}()
	}
	// Once all 8 are in flight, a 9th is refused at once.
	for deadline := time.Now().Add(10 * time.Second); in.InFlight() < appdb.MaxInFlight; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d in flight", in.InFlight())
		}
	}
	ninth := in.Handle(ctx, appdb.Request{V: 1, Type: appdb.RequestType, RequestID: "q9", Op: "exec", SQL: "SELECT 1"})
	if ninth.OK || ninth.Error.Code != "HOST_ERROR" || !ninth.Error.Retryable {
		t.Fatalf("the 9th: %+v", ninth)
	}
	dup := in.Handle(ctx, appdb.Request{V: 1, Type: appdb.RequestType, RequestID: "q0", Op: "exec", SQL: "SELECT 1"})
	if dup.OK || dup.Error.Code != "HOST_ERROR" || dup.Error.Retryable {
		t.Fatalf("a duplicate in-flight id: %+v", dup)
	}
	rt.Close()
	wg.Wait()
	for i, r := range results {
		if !r.OK {
			t.Fatalf("request %d of 8: %+v", i, r.Error)
		}
	}
	// The slots are free again, and a settled id may be reused.
	if r := in.Handle(ctx, appdb.Request{V: 1, Type: appdb.RequestType, RequestID: "q0", Op: "exec", SQL: "SELECT 1"}); !r.OK {
		t.Fatalf("after settling: %+v", r.Error)
	}
}

func TestSizeClasses(t *testing.T) {
	db, id := mustSetup(t)
	in := appdb.NewInstance(db, id)
	in.Handle(ctx, req("exec", map[string]any{"sql": "CREATE TABLE b (v BLOB)"}))
	// Export: at most 5 MiB of database.
	if r := in.Handle(ctx, req("exec", map[string]any{"sql": "INSERT INTO b VALUES (zeroblob(5300000))"})); !r.OK {
		t.Fatal(r.Error)
	}
	if r := in.Handle(ctx, req("export", nil)); r.OK || r.Error.Code != "DB_TOO_LARGE" {
		t.Fatalf("a 5.3 MB export: %+v", r)
	}
	// A result over the 8 MiB frame class (blobs render as number arrays).
	if r := in.Handle(ctx, req("exec", map[string]any{"sql": "SELECT v FROM b"})); r.OK || r.Error.Code != "DB_TOO_LARGE" {
		t.Fatalf("an oversized result: ok=%v", r.OK)
	}
	// An import over the artifact cap is refused before decoding.
	big := base64.StdEncoding.EncodeToString(make([]byte, appdb.MaxArtifactBytes+1))
	if r := in.Handle(ctx, req("import", map[string]any{"bytesBase64": big})); r.OK || r.Error.Code != "DB_TOO_LARGE" {
		t.Fatalf("an oversized import: %+v", r.Error)
	}
	atCap := base64.StdEncoding.EncodeToString(append([]byte("SQLite format 3\x00"), make([]byte, appdb.MaxArtifactBytes-16)...))
	if r := in.Handle(ctx, req("import", map[string]any{"bytesBase64": atCap})); r.OK || r.Error.Code != "DB_BAD_IMPORT" {
		t.Fatalf("an import at the cap is read (and found bad): %+v", r.Error)
	}
}

func TestRemovedAppAnswersNotFound(t *testing.T) {
	db, id := mustSetup(t)
	in := appdb.NewInstance(db, id)
	db.Remove(ctx, id)
	if r := in.Handle(ctx, req("exec", map[string]any{"sql": "SELECT 1"})); r.OK || r.Error.Code != "USERDB_NOT_FOUND" {
		t.Fatalf("%+v", r.Error)
	}
}
