package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// BenchmarkActions measures sustained browser.act throughput with several
// clients, each acting back to back on its own leased tab, once with the
// action journal in the path (clients with a journalKey) and once with the
// in-memory fence only (clients without one). It runs the real broker
// binary (testenv.StartBroker, personal mode, its journal in the state
// directory) and, instead of a browser, a Go provider that answers at once:
// the differences between the two fences are the journal's share.
// BENCHMARKS.md ("Action journal") has the figures and the commands.

// actClientCounts are the numbers of clients of BenchmarkActions.
var actClientCounts = []int{1, 4, 16}

// actMaxActions is how many actions one broker is given. The broker keeps
// at most browser.MaxFences in-memory fences (a client without a
// journalKey keeps one per action for as long as it is connected) and
// journal.DefaultMaxEntries journal records (kept 24 h), both 10,000; past
// that it answers JOURNAL_FULL. A longer run starts a fresh broker for
// every actMaxActions actions, with the timer stopped.
const actMaxActions = 9_000

// actTabURL is the URL of every tab the provider lists.
const actTabURL = "https://app.test/bench"

// The provider's fixed answers, encoded once.
var (
	actTabList = mustJSON(func() []browser.TabSummary {
		out := make([]browser.TabSummary, slices.Max(actClientCounts))
		for i := range out {
			out[i] = browser.TabSummary{ID: actTab(i), InstanceID: instanceID, URL: actTabURL, Title: "Bench"}
		}
		return out
	}())
	actGrant = mustJSON(map[string]any{"granted": true, "documentEpoch": "E:1", "url": actTabURL, "title": "Bench"})
	// actPage is the ax.read answer: a small page with one button.
	actPage = mustJSON(map[string]any{"documentEpoch": "E:1", "url": actTabURL, "title": "Bench", "nodes": []map[string]any{
		{"backendNodeId": 1, "role": "RootWebArea", "name": "Bench"},
		{"backendNodeId": 2, "role": "main", "name": "Main area"},
		{"backendNodeId": 3, "role": "heading", "name": "Bench page"},
		{"backendNodeId": 4, "role": "button", "name": "Go", "props": map[string]any{"focusable": true}},
		{"backendNodeId": 5, "role": "StaticText", "name": "Ready"},
	}})
	actQuads      = mustJSON(map[string]any{"quads": [][]float64{{10, 10, 110, 10, 110, 40, 10, 40}}})
	actEmpty      = mustJSON(map[string]any{})
	actReleased   = mustJSON(map[string]bool{"released": true})
	actDispatched = mustJSON(map[string]bool{"dispatched": true})
	actFacts      = mustJSON(map[string]any{"found": true, "connected": true, "sameDocument": true, "tag": "button",
		"disabled": false, "disabledKnown": true, "enabledState": true, "visible": true, "maxLength": -1,
		"scroll": map[string]int{"x": 0, "y": 0, "scrollWidth": 80, "scrollHeight": 20, "clientWidth": 80, "clientHeight": 20}})
)

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func actTab(i int) string { return fmt.Sprintf("%s:%d", instanceID, i+1) }

// actProvider stands in for the extension, as the scripted provider of
// package test does: it answers what a click or a key press asks for at
// once, from fixed answers, and counts the inputs it is sent.
type actProvider struct {
	conn   *rpc.Conn
	inputs atomic.Int64
}

func (p *actProvider) Handle(_ context.Context, req *rpc.Request) (any, error) {
	switch req.Method {
	case "tabs.list":
		return actTabList, nil
	case "lease.grant":
		return actGrant, nil
	case "lease.revoke":
		return actReleased, nil
	case "ax.read":
		return actPage, nil
	case "dom.read":
		return actFacts, nil
	case "cdp":
		var c struct{ Method string }
		json.Unmarshal(req.Params, &c)
		switch c.Method {
		case "DOM.scrollIntoViewIfNeeded":
			return actEmpty, nil
		case "DOM.getContentQuads":
			return actQuads, nil
		}
	case "input.click", "input.key":
		p.inputs.Add(1)
		return actDispatched, nil
	}
	return nil, wire.Err(wire.CodeUnsupportedCapability)
}

func (*actProvider) Event(*wire.Envelope) {}

// actEnv is a broker, the provider and n clients, each holding a lease on
// its own tab.
type actEnv struct {
	b       *testenv.Broker
	prov    *actProvider
	clients []*actClient
}

// actClient is one client connection with its session, lease and the ref
// of the page's button.
type actClient struct {
	c       *client.Client
	session string
	leaseID string
	epoch   string
	ref     string
	seq     int
}

// startActEnv starts the broker in personal mode (leases without a prompt),
// registers the provider and connects n clients. With durable, client i
// has a journalKey of its own, as separate agents would; the broker scopes
// journal records by key and session, and every record goes through the
// same writer lock and file, so one key with n sessions would cost the
// same. Without, the clients have no journalKey: their fences are in
// memory only. Everything stops when tb ends.
func startActEnv(tb testing.TB, n int, durable bool) *actEnv {
	tb.Helper()
	e := &actEnv{b: testenv.StartBroker(tb, "--access-mode=personal"), prov: &actProvider{}}
	nc, err := net.Dial("unix", e.b.Socket)
	if err != nil {
		tb.Fatal(err)
	}
	// limits: the provider receives 3 to 5 requests per action.
	e.prov.conn = mustRun(tb, nc, e.prov, limits)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.prov.conn.Call(ctx, "hello", testenv.ProviderHello(e.b.Token(tb), instanceID)); err != nil {
		tb.Fatalf("provider hello: %v", err)
	}
	for i := range n {
		var opts client.Options
		if durable {
			sum := sha256.Sum256(fmt.Appendf(nil, "bench client %d", i+1)) // distinct, and strong enough for the broker
			opts.JournalKey = hex.EncodeToString(sum[:])
		}
		c := &actClient{c: e.b.Client(tb, opts), session: fmt.Sprintf("s%d", i+1)}
		raw, err := c.c.Call(ctx, "browser.claim", map[string]any{"sessionId": c.session, "instanceId": instanceID, "tab": actTab(i)})
		if err != nil {
			tb.Fatalf("claim %s: %v", actTab(i), err)
		}
		var l browser.LeaseResult
		if err := json.Unmarshal(raw, &l); err != nil {
			tb.Fatal(err)
		}
		c.leaseID = l.ID
		raw, err = c.c.Call(ctx, "browser.observe", map[string]any{"sessionId": c.session, "leaseId": c.leaseID})
		if err != nil {
			tb.Fatalf("observe: %v", err)
		}
		var o browser.Observation
		if err := json.Unmarshal(raw, &o); err != nil {
			tb.Fatal(err)
		}
		c.epoch, c.ref = o.DocumentEpoch, refOf(tb, o, "button", "Go")
		e.clients = append(e.clients, c)
	}
	return e
}

// close disconnects the clients and the provider and stops the broker.
// The cleanups registered by startActEnv still run; they find nothing left
// to do.
func (e *actEnv) close(tb testing.TB) {
	tb.Helper()
	for _, c := range e.clients {
		c.c.Close()
	}
	e.prov.conn.Close()
	<-e.prov.conn.Done()
	e.b.Stop(tb)
}

// logTail is the end of the broker's log, for a failure message.
func (e *actEnv) logTail() string {
	log := e.b.Stderr.String()
	return log[max(0, len(log)-4000):]
}

// act is one browser.act round trip with a fresh request ID and no
// expectation: a click or an Enter key press on the button. It returns how
// long the call took, from sending the request to receiving the answer.
func (c *actClient) act(kind string) (time.Duration, error) {
	c.seq++
	action := map[string]any{"kind": kind, "ref": c.ref}
	if kind == "press" {
		action["key"] = "Enter"
	}
	params := map[string]any{"sessionId": c.session, "request": map[string]any{
		"requestId": fmt.Sprintf("r%d", c.seq), "leaseId": c.leaseID, "documentEpoch": c.epoch, "action": action,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	raw, err := c.c.Call(ctx, "browser.act", params)
	took := time.Since(start)
	if err != nil {
		return took, fmt.Errorf("browser.act: %w", err)
	}
	var r struct{ Dispatch, Code string }
	if err := json.Unmarshal(raw, &r); err != nil || r.Dispatch != "observed" || r.Code != "" {
		return took, fmt.Errorf("browser.act answered %.300s (%v)", raw, err)
	}
	return took, nil
}

// run makes total actions of kind, handed out to the clients as they
// become free, every client acting back to back. It returns the wall time
// and each action's latency.
func (e *actEnv) run(kind string, total int) (time.Duration, []time.Duration, error) {
	var next atomic.Int64
	took := make([][]time.Duration, len(e.clients))
	errs := make([]error, len(e.clients))
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range e.clients {
		wg.Go(func() {
			for next.Add(1) <= int64(total) {
				d, err := c.act(kind)
				if err != nil {
					errs[i] = err
					return
				}
				took[i] = append(took[i], d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	return elapsed, slices.Concat(took...), errors.Join(errs...)
}

// fences are the two ways an action is fenced against running twice.
var fences = []struct {
	name    string
	durable bool
}{
	{"journal", true}, // Lookup, then Reserve before dispatch and Settle after
	{"memory", false}, // in-memory fence only
}

// BenchmarkActions: see the comment at the top of the file. ns/op is the
// wall time divided by the actions, so it is inverse throughput; actions/s
// is the same figure inverted, and ms/op-p50 and ms/op-p99 are the latency
// of one action as its client saw it. Each run of the benchmark function
// starts a fresh broker (and one more every actMaxActions actions), outside
// the timer.
//
// kind=click is a click as the product does it, with the broker's 32 ms
// stability wait between its two geometry samples (browser.clickPoint):
// per client, at most about 30 clicks a second. kind=press (Enter on the
// button) has no such wait, so the journal's share shows more plainly.
//
// go test runs a sub-benchmark's -count samples in a row, so for samples
// that interleave, run the test binary several times with -count=1;
// DSH_BENCH_REVERSE=1 puts the memory fence first.
func BenchmarkActions(b *testing.B) {
	order := slices.Clone(fences)
	if os.Getenv(reverseEnv) == "1" {
		slices.Reverse(order)
	}
	for _, kind := range []string{"click", "press"} {
		b.Run("kind="+kind, func(b *testing.B) {
			for _, n := range actClientCounts {
				b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
					for _, f := range order {
						b.Run("fence="+f.name, func(b *testing.B) {
							var elapsed time.Duration
							var took []time.Duration
							b.StopTimer()
							for done := 0; done < b.N; {
								chunk := min(b.N-done, actMaxActions)
								e := startActEnv(b, n, f.durable)
								b.StartTimer()
								wall, lat, err := e.run(kind, chunk)
								b.StopTimer()
								if err != nil {
									b.Fatalf("%v\nbroker log (end):\n%s", err, e.logTail())
								}
								if got := e.prov.inputs.Load(); got != int64(chunk) {
									b.Fatalf("the provider was sent %d inputs for %d actions", got, chunk)
								}
								e.close(b)
								elapsed += wall
								took = append(took, lat...)
								done += chunk
							}
							b.ReportMetric(float64(b.N)/elapsed.Seconds(), "actions/s")
							reportPercentiles(b, took)
						})
					}
				})
			}
		})
	}
}

// reportPercentiles reports the median and the 99th percentile of took,
// in milliseconds (nearest rank).
func reportPercentiles(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	at := func(p float64) float64 {
		i := int(p*float64(len(took))+0.999999) - 1
		return float64(took[max(i, 0)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "ms/op-p50")
	b.ReportMetric(at(0.99), "ms/op-p99")
}

// TestActionBenchPaths proves BenchmarkActions measures what it says: with
// a journalKey every action leaves one settled record in the broker's
// journal, without one it leaves none, and every action sends the provider
// exactly one input.
func TestActionBenchPaths(t *testing.T) {
	for _, f := range fences {
		t.Run(f.name, func(t *testing.T) {
			e := startActEnv(t, 2, f.durable)
			for _, c := range e.clients {
				for _, kind := range []string{"click", "press"} {
					if _, err := c.act(kind); err != nil {
						t.Fatalf("%s: %v\nbroker log (end):\n%s", kind, err, e.logTail())
					}
				}
			}
			if got := e.prov.inputs.Load(); got != 4 {
				t.Fatalf("the provider was sent %d inputs for 4 actions", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			raw, err := e.b.Client(t, client.Options{}).Call(ctx, "broker.status", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			var st broker.Status
			if err := json.Unmarshal(raw, &st); err != nil || st.Journal == nil || st.Journal.Problem != "" {
				t.Fatalf("status %s (%v): want an available journal", raw, err)
			}
			want := 0
			if f.durable {
				want = 4
			}
			if st.Journal.Entries != want || st.Journal.Uncertain != 0 {
				t.Fatalf("journal holds %d records (%d uncertain), want %d, all settled", st.Journal.Entries, st.Journal.Uncertain, want)
			}
		})
	}
}

// BenchmarkJournal measures the journal on its own, side by side in one
// run: a bare fsync and fdatasync of a record's size on the same disk, and
// durable actions (Reserve then Settle of a new key, as browser.act does)
// by 1, 4 and 16 concurrent clients, each back to back:
//
//   - style=group is package journal: its group-committed write-ahead log.
//   - style=commit is a model of the journal as it was before it had a
//     log (commit 020a6e5): a read transaction for the duplicate check,
//     then one bbolt commit per Reserve and per Settle, all under one
//     writer lock; the same record sizes and MACs.
//
// It reports actions/s (for op=fsync and op=fdatasync, syncs/s) and the
// latency of one action (ms/op-p50, ms/op-p99); ns/op is the wall time per
// action. op=action-vs-fsync interleaves the two that the journal's target
// compares (see benchActionVsFsync). BENCHMARKS.md ("Action journal") has the figures and commands.
func BenchmarkJournal(b *testing.B) {
	syncOp := func(sync func(*os.File) error) func(*testing.B) {
		return func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, 300) // a settled record is at most 300 bytes
			took := make([]time.Duration, 0, b.N)
			start := time.Now()
			for b.Loop() {
				t0 := time.Now()
				if _, err := f.WriteAt(buf, 0); err != nil {
					b.Fatal(err)
				}
				if err := sync(f); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			b.ReportMetric(float64(len(took))/time.Since(start).Seconds(), "actions/s")
			reportPercentiles(b, took)
		}
	}
	ops := []struct {
		name string
		run  func(*testing.B)
	}{
		{"op=fsync", syncOp((*os.File).Sync)},
		{"op=fdatasync", syncOp(func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) })},
		{"op=action-vs-fsync", benchActionVsFsync},
	}
	for _, n := range actClientCounts {
		for _, st := range journalStyles {
			ops = append(ops, struct {
				name string
				run  func(*testing.B)
			}{fmt.Sprintf("clients=%d/style=%s", n, st.name), func(b *testing.B) { benchDurable(b, n, st.open) }})
		}
	}
	if os.Getenv(reverseEnv) == "1" {
		slices.Reverse(ops)
	}
	for _, op := range ops {
		b.Run(op.name, op.run)
	}
}

// benchActionVsFsync alternates, in one loop, a bare fsync of a record's
// size and one durable action through the journal (one client), which
// goes first changing every time: both see the disk at the same moments,
// so their ratio holds on a disk whose speed drifts. It reports both
// medians and means, and the ratios (x-p50, x-mean: action ÷ fsync).
func benchActionVsFsync(b *testing.B) {
	dir := b.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, "f"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	j := journalStyles[0].open(b, filepath.Join(dir, "journal.db"))
	defer j.Close()
	buf := make([]byte, 300)
	h := sha256.Sum256([]byte("payload"))
	var syncs, actions []time.Duration
	fsync := func() {
		t0 := time.Now()
		if _, err := f.WriteAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		syncs = append(syncs, time.Since(t0))
	}
	act := func(i int) {
		k := journal.Key{Scope: "k\x00s", RequestID: fmt.Sprint("r", i)}
		t0 := time.Now()
		if err := j.Reserve(k, h, "click"); err != nil {
			b.Fatal(err)
		}
		if err := j.Settle(k, journal.OutcomeSucceeded, journal.DispatchObserved); err != nil {
			b.Fatal(err)
		}
		actions = append(actions, time.Since(t0))
	}
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			fsync()
			act(i)
		} else {
			act(i)
			fsync()
		}
		i++
	}
	mean := func(d []time.Duration) float64 {
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		return float64(sum) / float64(len(d))
	}
	slices.Sort(syncs)
	slices.Sort(actions)
	p50 := func(d []time.Duration) float64 { return float64(d[(len(d)-1)/2]) / float64(time.Millisecond) }
	b.ReportMetric(p50(actions), "action-ms-p50")
	b.ReportMetric(p50(syncs), "fsync-ms-p50")
	b.ReportMetric(p50(actions)/p50(syncs), "x-p50")
	b.ReportMetric(mean(actions)/mean(syncs), "x-mean")
}

// durableJournal is what BenchmarkJournal drives: Reserve, then Settle.
type durableJournal interface {
	Reserve(k journal.Key, hash [32]byte, kind string) error
	Settle(k journal.Key, outcome, dispatch string) error
	Close() error
}

// journalStyles are the two journals of BenchmarkJournal.
var journalStyles = []struct {
	name string
	open func(tb testing.TB, path string) durableJournal
}{
	{"group", func(tb testing.TB, path string) durableJournal {
		j := journal.Open(path, journal.Options{MaxEntries: 1 << 30, MaxBytes: 1 << 40})
		if p := j.Err(); p != nil {
			tb.Fatal(p)
		}
		return j
	}},
	{"commit", func(tb testing.TB, path string) durableJournal { return openCommitJournal(tb, path) }},
}

// benchDurable runs b.N durable actions through a fresh journal, handed
// out to n clients acting back to back.
func benchDurable(b *testing.B, n int, open func(testing.TB, string) durableJournal) {
	j := open(b, filepath.Join(b.TempDir(), "journal.db"))
	defer j.Close()
	var next atomic.Int64
	took := make([][]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for c := range n {
		wg.Go(func() {
			h := sha256.Sum256([]byte("payload"))
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				k := journal.Key{Scope: fmt.Sprintf("%064x\x00s%d", c, c), RequestID: fmt.Sprint("r", i)}
				t0 := time.Now()
				if err := j.Reserve(k, h, "click"); err != nil {
					errs[c] = err
					return
				}
				if err := j.Settle(k, journal.OutcomeSucceeded, journal.DispatchObserved); err != nil {
					errs[c] = err
					return
				}
				took[c] = append(took[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "actions/s")
	reportPercentiles(b, slices.Concat(took...))
}

// commitJournal models the journal before its write-ahead log: every
// Reserve and Settle is a read transaction, then a bbolt commit (dirty
// pages, fdatasync, meta page, fdatasync), under one writer lock. Records
// are as the journal's: a 32-byte MAC key, and a MAC and canonical JSON of
// the same fields as the value.
type commitJournal struct {
	mu     sync.Mutex
	db     *bolt.DB
	secret []byte
}

var commitBucket = []byte("records")

func openCommitJournal(tb testing.TB, path string) *commitJournal {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(commitBucket); return err }); err != nil {
		tb.Fatal(err)
	}
	return &commitJournal{db: db, secret: bytes.Repeat([]byte{0x5e}, 32)}
}

func (c *commitJournal) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, c.secret)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// value is a record's MAC and JSON, as the journal stores it.
func (c *commitJournal) value(key []byte, hash [32]byte, state, dispatch, outcome string, reservedAt, settledAt int64) []byte {
	pad := c.mac("hash", string(key))
	for i := range hash {
		hash[i] ^= pad[i]
	}
	js, _ := json.Marshal(struct {
		V          int    `json:"v"`
		Hash       string `json:"hash"`
		Kind       string `json:"kind"`
		State      string `json:"state"`
		Dispatch   string `json:"dispatch"`
		Outcome    string `json:"outcome,omitempty"`
		ReservedAt int64  `json:"reservedAt"`
		SettledAt  int64  `json:"settledAt,omitempty"`
	}{1, hex.EncodeToString(hash[:]), "click", state, dispatch, outcome, reservedAt, settledAt})
	return append(c.mac("record", string(key), string(js)), js...)
}

// put commits key = val if the stored value is still want.
func (c *commitJournal) put(key, want, val []byte) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(commitBucket)
		if !bytes.Equal(b.Get(key), want) {
			return errors.New("the record changed under the writer lock")
		}
		return b.Put(key, val)
	})
}

func (c *commitJournal) get(key []byte) (v []byte) {
	c.db.View(func(tx *bolt.Tx) error { v = bytes.Clone(tx.Bucket(commitBucket).Get(key)); return nil })
	return v
}

func (c *commitJournal) Reserve(k journal.Key, hash [32]byte, kind string) error {
	key := c.mac("key", k.Scope, k.RequestID)
	val := c.value(key, hash, journal.StateReserved, journal.DispatchUnknown, "", time.Now().UnixNano(), 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.get(key) != nil {
		return errors.New("duplicate")
	}
	return c.put(key, nil, val)
}

func (c *commitJournal) Settle(k journal.Key, outcome, dispatch string) error {
	key := c.mac("key", k.Scope, k.RequestID)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.get(key)
	if old == nil {
		return errors.New("settle without a reservation")
	}
	val := c.value(key, sha256.Sum256(nil), journal.StateSettled, dispatch, outcome, time.Now().UnixNano(), time.Now().UnixNano())
	return c.put(key, old, val)
}

func (c *commitJournal) Close() error { return c.db.Close() }
