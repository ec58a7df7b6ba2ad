package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	browserruntime "github.com/dsh-browser/broker/browser/runtime"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// instanceID is the provider's browser instance.
const instanceID = "inst"

// tabs is the provider's answer to tabs.list: five HTTPS tabs of instanceID,
// all of which survive the broker's filter.
var tabs = func() []browser.TabSummary {
	out := make([]browser.TabSummary, 5)
	for i := range out {
		out[i] = browser.TabSummary{
			ID:         fmt.Sprintf("%s:%d", instanceID, i+1),
			InstanceID: instanceID,
			URL:        fmt.Sprintf("https://site%d.example/path/to/page?q=%d", i+1, i+1),
			Title:      fmt.Sprintf("Example page %d", i+1),
		}
	}
	return out
}()

// wantTabs is the encoding of tabs. The provider sends exactly these bytes,
// and the broker, which decodes, filters and re-encodes the list, must send
// them back unchanged, so each round trip is checked with one bytes.Equal.
var wantTabs = func() json.RawMessage {
	b, err := json.Marshal(tabs)
	if err != nil {
		panic(err)
	}
	return b
}()

// limits are the limits of every connection that receives requests. The
// protocol closes a connection after 10,000 incoming transport IDs (it
// remembers each one and never evicts), and a benchmark makes more calls
// than that on one connection, so the cap is lifted. The seen-ID set still
// grows with every request, as it does in production.
var limits = rpc.Limits{MaxSeenIDs: 1 << 30}

// tabsParams are the client's browser.tabs params on the broker path.
var tabsParams = map[string]string{"sessionId": "s", "instanceId": instanceID}

// provider answers tabs.list with wantTabs. It needs no hello of its own:
// on the broker path it sends one; on the relay path nobody asks for one.
type provider struct{}

func (provider) Handle(_ context.Context, req *rpc.Request) (any, error) {
	if req.Method != "tabs.list" {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	return wantTabs, nil
}

func (provider) Event(*wire.Envelope) {}

// refuser is the handler of client-side connections: clients serve nothing.
type refuser struct{}

func (refuser) Handle(context.Context, *rpc.Request) (any, error) {
	return nil, wire.Err(wire.CodeInvalidRequest)
}

func (refuser) Event(*wire.Envelope) {}

// roundTrip performs one request from the client to the provider and back,
// returning the tab list as the client received it.
type roundTrip func(ctx context.Context) (json.RawMessage, error)

// routes are the two ways from a client to the provider, compared side by
// side by every benchmark and by TestRoundTripPaths.
var routes = []struct {
	name  string
	start func(testing.TB) roundTrip
}{
	{"broker", mustBrokerPath},
	{"relay", mustRelayPath},
}

// mustBrokerPath starts an in-process broker in a fresh runtime directory,
// registers a provider for instanceID over the broker's socket, dials a
// client and returns a browser.tabs round trip. Everything is shut down and
// removed when tb ends.
func mustBrokerPath(tb testing.TB) roundTrip {
	tb.Helper()
	dir := mustShortDir(tb)
	socket := filepath.Join(dir, paths.SocketName)
	srv, err := broker.New(broker.Config{RuntimeDir: dir, SocketPath: socket, Limits: limits,
		Services: []service.Register{browserruntime.Register(browserruntime.Config{Personal: true})}})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			tb.Errorf("broker Serve: %v", err)
		}
	})
	mustWaitListening(tb, socket, served)

	token, err := os.ReadFile(paths.Token(dir))
	if err != nil {
		tb.Fatal(err)
	}
	nc, err := net.Dial("unix", socket)
	if err != nil {
		tb.Fatal(err)
	}
	prov := mustRun(tb, nc, provider{}, limits)
	hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
	defer hcancel()
	hello := testenv.ProviderHello(strings.TrimSpace(string(token)), instanceID)
	if _, err := prov.Call(hctx, "hello", hello); err != nil {
		tb.Fatalf("provider hello: %v", err)
	}

	c, err := client.Dial(hctx, client.Options{RuntimeDir: dir, SocketPath: socket})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Close()
		<-c.Done()
	})
	return func(ctx context.Context) (json.RawMessage, error) {
		return c.Call(ctx, "browser.tabs", tabsParams)
	}
}

// mustRelayPath starts the baseline: the provider listening on its own Unix
// socket and a relay that, for each connection it accepts, dials the
// provider and copies bytes both ways without parsing them. The client is a
// bare rpc.Conn on the relay's socket calling tabs.list directly. Everything
// is shut down and removed when tb ends.
func mustRelayPath(tb testing.TB) roundTrip {
	tb.Helper()
	dir := mustShortDir(tb)
	provSocket := filepath.Join(dir, "provider.sock")
	relaySocket := filepath.Join(dir, "relay.sock")

	var wg sync.WaitGroup
	tb.Cleanup(wg.Wait) // runs last: after every listener and conn is closed

	provLn := mustListen(tb, provSocket)
	wg.Go(func() {
		serveConns(provLn, func(c net.Conn) func() {
			conn := rpc.New(c, provider{}, limits, nil)
			go conn.Run()
			return func() { conn.Close(); <-conn.Done() }
		})
	})

	relayLn := mustListen(tb, relaySocket)
	wg.Go(func() {
		serveConns(relayLn, func(c net.Conn) func() {
			up, err := net.Dial("unix", provSocket)
			if err != nil {
				c.Close()
				return func() {}
			}
			var copies sync.WaitGroup
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, src)
				dst.Close() // one side ended: end the other
				src.Close()
			}
			copies.Go(func() { pipe(up, c) })
			copies.Go(func() { pipe(c, up) })
			return func() { c.Close(); up.Close(); copies.Wait() }
		})
	})

	nc, err := net.Dial("unix", relaySocket)
	if err != nil {
		tb.Fatal(err)
	}
	conn := mustRun(tb, nc, refuser{}, rpc.Limits{}) // as client.Dial
	return func(ctx context.Context) (json.RawMessage, error) {
		return conn.Call(ctx, "tabs.list", struct{}{})
	}
}

// serveConns accepts on ln until it is closed, handing each connection to
// handle, which returns a function that closes that connection and waits for
// its goroutines. Once ln is closed, serveConns closes every connection it
// accepted and returns.
func serveConns(ln net.Listener, handle func(net.Conn) (stop func())) {
	var stops []func()
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		stops = append(stops, handle(c))
	}
	for _, stop := range stops {
		stop()
	}
}

// mustRun starts an rpc.Conn over nc and closes it when tb ends.
func mustRun(tb testing.TB, nc net.Conn, h rpc.Handler, l rpc.Limits) *rpc.Conn {
	tb.Helper()
	conn := rpc.New(nc, h, l, nil)
	go conn.Run()
	tb.Cleanup(func() {
		conn.Close()
		<-conn.Done()
	})
	return conn
}

// mustListen listens on a Unix socket, closed when tb ends.
func mustListen(tb testing.TB, socket string) net.Listener {
	tb.Helper()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	return ln
}

// mustShortDir returns a fresh private directory with a short path (Unix
// socket paths are limited to 107 bytes), removed when tb ends.
func mustShortDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "b")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// mustWaitListening waits until socket accepts a connection, failing if
// the broker exits or 10 s pass first.
func mustWaitListening(tb testing.TB, socket string, served <-chan error) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-served:
			tb.Fatalf("broker exited at start: %v", err)
		default:
		}
		if c, err := net.Dial("unix", socket); err == nil {
			c.Close()
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatal("broker did not listen within 10s")
}

// TestRoundTripPaths proves that both benchmark paths work: each delivers
// the provider's five tabs to the client, byte for byte, and leaves no
// goroutine behind once torn down.
func TestRoundTripPaths(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			call := r.start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			raw, err := call(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []browser.TabSummary
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tabs) || !bytes.Equal(raw, wantTabs) {
				t.Fatalf("got %s, want %s", raw, wantTabs)
			}
		})
	}
	// Every path's cleanup has run: its goroutines must be gone. Closed
	// connections may take a moment to finish unwinding.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left behind (before: %d):\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// check returns an error unless a round trip returned wantTabs. It is one
// bytes.Equal over ~650 bytes on the success path, cheap enough to run
// inside the timed loop for both paths alike.
func check(raw json.RawMessage, err error) error {
	if err == nil && !bytes.Equal(raw, wantTabs) {
		err = fmt.Errorf("round trip returned %s, want %s", raw, wantTabs)
	}
	return err
}

// BenchmarkRoundTrip measures one request from a client to the provider and
// back, sequentially: through the broker (client → broker → provider, with
// hello-authenticated peers, envelope validation, routing and tab
// filtering), and through a relay that copies bytes over the same two Unix
// socket hops without looking at them.
func BenchmarkRoundTrip(b *testing.B) {
	for _, r := range routes {
		b.Run(r.name, func(b *testing.B) {
			call := r.start(b)
			ctx := context.Background()
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				if err := check(call(ctx)); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report()
		})
	}
}

// BenchmarkRoundTripParallel runs the same round trips from GOMAXPROCS
// goroutines at once, all sharing one client connection. Sharing keeps the
// topology identical on both paths, one connection per hop: the broker
// multiplexes every client's calls for an instance onto its single provider
// connection anyway, whereas one client connection per goroutine would give
// the relay one provider connection per goroutine and compare different
// shapes. rpc.Conn is safe for concurrent calls, so the shared connection
// also measures request multiplexing, which is how agents use it.
func BenchmarkRoundTripParallel(b *testing.B) {
	for _, r := range routes {
		b.Run(r.name, func(b *testing.B) {
			call := r.start(b)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := check(call(ctx)); err != nil {
						b.Error(err) // FailNow is for the benchmark goroutine only
						return
					}
				}
			})
			cpu.report()
		})
	}
}

// cpuClock measures the CPU time (user and system) the whole process spends
// during a benchmark's loop, and how often its threads were switched out.
// Client, broker or relay, and provider share the process, so cpu-ns/op is
// the work of one round trip on every party. On a machine shared with other
// work, wall time also counts the time a runnable thread waits for a core,
// and a path whose goroutines wake other threads more often waits more;
// CPU time does not, so it separates what a path costs from what the
// machine's load adds, and ctxsw/op (voluntary and involuntary context
// switches) counts the wake-ups that expose a path to that load.
type cpuClock struct {
	b     *testing.B
	start syscall.Rusage
}

func startCPU(b *testing.B) cpuClock { return cpuClock{b, rusage(b)} }

// report adds cpu-ns/op and ctxsw/op to the benchmark's results.
func (c cpuClock) report() {
	if c.b.N == 0 {
		return
	}
	end := rusage(c.b)
	cpu := func(ru syscall.Rusage) int64 { return ru.Utime.Nano() + ru.Stime.Nano() }
	switches := func(ru syscall.Rusage) int64 { return ru.Nvcsw + ru.Nivcsw }
	c.b.ReportMetric(float64(cpu(end)-cpu(c.start))/float64(c.b.N), "cpu-ns/op")
	c.b.ReportMetric(float64(switches(end)-switches(c.start))/float64(c.b.N), "ctxsw/op")
}

// rusage returns the resources the process has used so far.
func rusage(tb testing.TB) syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru
}
