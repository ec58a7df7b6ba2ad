package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
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
			key := make([]byte, 32) // random: the broker refuses a weak key
			rand.Read(key)
			opts.JournalKey = hex.EncodeToString(key)
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
