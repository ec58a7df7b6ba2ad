package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/snug/agent/agenttest"
	"github.com/dsh-browser/broker/snug/appdb"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/userdb"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
)

// The Snug benchmarks compare a db request made by an app in a runner tab
// (app → runner page → service worker → native host → broker → hub →
// appdb → the user file, and back) with the same SQL run directly: through
// appdb in-process (the hub's work without the transport), and on a plain
// SQLite file. And an app-message to its first streamed frame, against the
// stub agent's own first chunk.

// benchApp is a Snug app with a small client the benchmarks drive: it
// makes its table of 100 rows, then runs what it is asked in a loop and
// returns the median and the total in milliseconds.
const benchApp = `<!doctype html><title>bench</title><script>
(function () {
  let instanceId = null, n = 0;
  const pending = new Map();
  addEventListener('message', (e) => {
    if (e.source !== parent || !e.data || e.data.v !== 1) return;
    const f = e.data;
    if (f.type === 'snug:host-ready') { if (!instanceId) { instanceId = f.instanceId; setup(); } return; }
    const p = pending.get(f.requestId);
    if (!p) return;
    if (f.type === 'snug:app-response' && f.streaming) { if (p.first) { p.first(); p.first = null; } return; }
    pending.delete(f.requestId);
    p.done(f);
  });
  const ask = (f, first) => new Promise((done) => {
    const requestId = 'b' + (++n);
    pending.set(requestId, { done, first });
    parent.postMessage(Object.assign({ v: 1, requestId, instanceId }, f), '*');
  });
  const db = (op) => ask(Object.assign({ type: 'snug:db-request' }, op));
  async function setup() {
    await db({ op: 'exec', sql: 'CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL)' });
    for (let i = 1; i <= 100; i++) await db({ op: 'exec', sql: 'INSERT OR REPLACE INTO notes VALUES (?, ?, ?)', params: [i, 'title ' + i, 'body '.repeat(20)] });
    document.title = 'ready';
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  // read(n): n SELECTs of one row by id, one after another.
  window.read = async (count) => {
    const times = [];
    for (let i = 0; i < count; i++) {
      const t = performance.now();
      const f = await db({ op: 'exec', sql: 'SELECT id, title, body FROM notes WHERE id = ?', params: [1 + (i % 100)] });
      if (!f.ok || f.rows.length !== 1) throw new Error('bad answer ' + JSON.stringify(f));
      times.push(performance.now() - t);
    }
    return { median: median(times) };
  };
  // write(n): n UPDATEs of one row.
  window.write = async (count) => {
    const times = [];
    for (let i = 0; i < count; i++) {
      const t = performance.now();
      const f = await db({ op: 'exec', sql: 'UPDATE notes SET title = ? WHERE id = ?', params: ['t' + i, 1 + (i % 100)] });
      if (!f.ok) throw new Error('bad answer ' + JSON.stringify(f));
      times.push(performance.now() - t);
    }
    return { median: median(times) };
  };
  // turns(n): n app-messages; the time to the first streamed frame.
  window.turns = async (count) => {
    const first = [], whole = [];
    for (let i = 0; i < count; i++) {
      const t = performance.now();
      let t1 = 0;
      const f = await ask({ type: 'snug:app-message', appId: 'bench', action: 'echo' }, () => { t1 = performance.now(); });
      if (!f.ok || !t1) throw new Error('bad answer ' + JSON.stringify(f));
      first.push(t1 - t);
      whole.push(performance.now() - t);
    }
    return { median: median(first), whole: median(whole) };
  };
})();
</script>`

// snugEnv is the whole product with the bench app open in a runner tab.
type snugEnv struct {
	s    *stack.Stack
	app  *stack.AppTab
	stub *agenttest.Server
}

func startSnugEnv(tb testing.TB) *snugEnv {
	tb.Helper()
	e := &snugEnv{s: stack.Start(tb), stub: agenttest.New(agenttest.Reply{Chunks: []string{`{"message":`, `"ok"}`}})}
	tb.Cleanup(e.stub.Close)
	c := e.s.B.Client(tb, client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := c.Call(ctx, apps.MethodInstall, apps.InstallParams{HTML: benchApp})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := c.Call(ctx, apps.MethodAgentSet, apps.AgentSetParams{Provider: apps.AgentOpenAI, Endpoint: e.stub.BaseURL()}); err != nil {
		tb.Fatal(err)
	}
	var saved apps.Saved
	json.Unmarshal(raw, &saved)
	e.app = e.s.OpenApp(tb, saved.App.ID, `document.title === 'ready' ? 'ready' : ''`)
	return e
}

// runJS runs fn(n) in the app and returns its median in ms.
func (e *snugEnv) runJS(tb testing.TB, fn string, n int) (median, whole float64) {
	tb.Helper()
	raw := chromium.Eval[string](tb, e.s.Browser, e.app.Frame, fmt.Sprintf(`%s(%d).then((r) => JSON.stringify(r))`, fn, n))
	var r struct{ Median, Whole float64 }
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		tb.Fatalf("%s: %s", fn, raw)
	}
	return r.Median, r.Whole
}

// directDB is the same table, served by appdb in-process (the hub without
// its transport), and the same rows in a plain SQLite file.
type directDB struct {
	seat  *appdb.Instance
	plain *sql.DB
}

func startDirectDB(tb testing.TB) *directDB {
	tb.Helper()
	dir := tb.TempDir()
	udb, err := userdb.Open(filepath.Join(dir, userdb.FileName), userdb.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { udb.Close() })
	a, err := udb.Install(context.Background(), userdb.AppMeta{DisplayName: "bench"}, "<p>")
	if err != nil {
		tb.Fatal(err)
	}
	d := &directDB{seat: appdb.NewInstance(udb, a.ID)}
	if d.plain, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "plain.db")+"?_pragma=synchronous(FULL)"); err != nil {
		tb.Fatal(err)
	}
	d.plain.SetMaxOpenConns(1)
	tb.Cleanup(func() { d.plain.Close() })
	const create = `CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL)`
	d.exec(tb, create)
	if _, err := d.plain.Exec(create); err != nil {
		tb.Fatal(err)
	}
	for i := 1; i <= 100; i++ {
		d.exec(tb, `INSERT INTO notes VALUES (?, ?, ?)`, i, fmt.Sprint("title ", i), strings.Repeat("body ", 20))
		if _, err := d.plain.Exec(`INSERT INTO notes VALUES (?, ?, ?)`, i, fmt.Sprint("title ", i), strings.Repeat("body ", 20)); err != nil {
			tb.Fatal(err)
		}
	}
	return d
}

var seatSeq int

func (d *directDB) exec(tb testing.TB, q string, args ...any) appdb.Response {
	seatSeq++
	params := make([]json.RawMessage, len(args))
	for i, a := range args {
		params[i], _ = json.Marshal(a)
	}
	r := d.seat.Handle(context.Background(), appdb.Request{V: 1, Type: appdb.RequestType, RequestID: fmt.Sprint("d", seatSeq), InstanceID: "i",
		Op: "exec", SQL: q, Params: params})
	if !r.OK {
		tb.Fatalf("%s: %+v", q, r.Error)
	}
	return r
}

func (d *directDB) plainRead(tb testing.TB, id int) {
	var got int
	var title, body string
	if err := d.plain.QueryRow(`SELECT id, title, body FROM notes WHERE id = ?`, id).Scan(&got, &title, &body); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkSnugDB: one db request from the app, sequentially, through the
// whole product; the same through appdb in-process; the same SQL on a
// plain SQLite file. The app path reports the median of its own loop
// (app-ms/op) besides ns/op.
func BenchmarkSnugDB(b *testing.B) {
	e := startSnugEnv(b)
	d := startDirectDB(b)
	b.Run("read/app", func(b *testing.B) {
		m, _ := e.runJS(b, "read", b.N)
		b.ReportMetric(m, "median-ms")
	})
	b.Run("read/appdb", func(b *testing.B) {
		for i := range b.N {
			d.exec(b, `SELECT id, title, body FROM notes WHERE id = ?`, 1+i%100)
		}
	})
	b.Run("read/sqlite", func(b *testing.B) {
		for i := range b.N {
			d.plainRead(b, 1+i%100)
		}
	})
	b.Run("write/app", func(b *testing.B) {
		m, _ := e.runJS(b, "write", b.N)
		b.ReportMetric(m, "median-ms")
	})
	b.Run("write/appdb", func(b *testing.B) {
		for i := range b.N {
			d.exec(b, `UPDATE notes SET title = ? WHERE id = ?`, fmt.Sprint("t", i), 1+i%100)
		}
	})
	b.Run("write/sqlite", func(b *testing.B) {
		for i := range b.N {
			if _, err := d.plain.Exec(`UPDATE notes SET title = ? WHERE id = ?`, fmt.Sprint("t", i), 1+i%100); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSnugFirstFrame: an app-message to its first streamed
// app-response, the stub agent answering at once; against the stub's own
// first chunk fetched directly from Go (the agent's share of it).
func BenchmarkSnugFirstFrame(b *testing.B) {
	e := startSnugEnv(b)
	b.Run("app", func(b *testing.B) {
		first, whole := e.runJS(b, "turns", b.N)
		b.ReportMetric(first, "first-ms")
		b.ReportMetric(whole, "terminal-ms")
	})
	b.Run("agent", func(b *testing.B) {
		body := `{"messages":[{"role":"user","content":"x"}],"stream":true}`
		for range b.N {
			resp, err := http.Post(e.stub.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 16)
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// TestSnugBenchPaths runs each benchmark path once, so `go test` checks them.
func TestSnugBenchPaths(t *testing.T) {
	e := startSnugEnv(t)
	d := startDirectDB(t)
	e.runJS(t, "read", 3)
	e.runJS(t, "write", 3)
	if first, whole := e.runJS(t, "turns", 2); first <= 0 || whole < first {
		t.Fatalf("first frame %v ms, terminal %v ms", first, whole)
	}
	if r := d.exec(t, `SELECT title FROM notes WHERE id = ?`, 7); fmt.Sprint(r.Rows) != "[[title 7]]" {
		t.Fatalf("appdb: %v", r.Rows)
	}
	d.plainRead(t, 7)
}
