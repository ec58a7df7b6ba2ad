package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/test/harness/testenv"
)

// TestSoak runs the real broker under a mixed client load and checks that
// it gives back what it took: file descriptors and goroutines return to
// their idle level once the load stops, and memory stays bounded. By
// default it runs 20 s; DSH_SOAK=10m runs the 10-minute soak whose
// figures BENCHMARKS.md records ("Soak").
//
// The load, from 8 workers at once, loops: connect (every 8th client with
// a journalKey, until 8,000 durable actions), list tabs, claim, observe three times, act three
// times, check status, release, disconnect; and, beside them, a peer that
// opens sockets and never says hello, and one that sends a bad token.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak")
	}
	d := 20 * time.Second
	if v := os.Getenv("DSH_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("DSH_SOAK=%q: %v", v, err)
		}
	}
	b := testenv.StartBroker(t, "--access-mode=personal")
	prov := &actProvider{}
	nc, err := net.Dial("unix", b.Socket)
	if err != nil {
		t.Fatal(err)
	}
	prov.conn = mustRun(t, nc, prov, limits)
	ctx := context.Background()
	if _, err := prov.conn.Call(ctx, "hello", testenv.ProviderHello(b.Token(t), instanceID)); err != nil {
		t.Fatalf("provider hello: %v", err)
	}
	pid := b.Cmd.Process.Pid
	idle := sample(t, b, pid)
	t.Logf("idle:  %s", idle)

	var (
		stop                  atomic.Bool
		actions, errs, rounds atomic.Int64
		durable               atomic.Int64
		wg                    sync.WaitGroup
	)
	// Durable identities are bounded (10,000 journal records a day, past
	// which JOURNAL_FULL is the right answer): keyed rounds stop after 8,000.
	var keyed atomic.Int64
	keyed.Store(8000)
	const workers = 8
	for w := range workers {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				withKey := i%8 == 0 && keyed.Add(-3) >= 0
				if err := soakRound(b, w, withKey, &actions, &durable); err != nil {
					errs.Add(1)
					if errs.Load() <= 5 {
						t.Logf("worker %d round %d: %v", w, i, err)
					}
				}
				rounds.Add(1)
			}
		})
	}
	wg.Go(func() { // sockets that never say hello
		for !stop.Load() {
			if c, err := net.Dial("unix", b.Socket); err == nil {
				time.Sleep(20 * time.Millisecond)
				c.Close()
			}
		}
	})
	wg.Go(func() { // wrong tokens
		for !stop.Load() {
			p := b.DialPeer(t)
			p.Call("hello", testenv.ClientHello(strings.Repeat("0", 64)))
			p.Conn.Close()
			time.Sleep(5 * time.Millisecond)
		}
	})
	var peak soakSample
	start := time.Now()
	deadline := start.Add(d)
	every := max(5*time.Second, d/20)
	for time.Now().Before(deadline) {
		time.Sleep(min(every, time.Until(deadline)))
		s := sample(t, b, pid)
		peak = peak.max(s)
		t.Logf("%5.0fs: %s", time.Since(start).Seconds(), s)
	}
	stop.Store(true)
	wg.Wait()
	time.Sleep(time.Second) // closed connections' goroutines finish
	end := sample(t, b, pid)
	t.Logf("peak:  %s", peak)
	t.Logf("end:   %s", end)
	t.Logf("%d rounds, %d actions (%d durable), %d failed rounds in %v", rounds.Load(), actions.Load(), durable.Load(), errs.Load(), d)
	if errs.Load() > 0 {
		t.Errorf("%d rounds failed", errs.Load())
	}
	if end.fds > idle.fds+2 {
		t.Errorf("file descriptors: %d idle, %d after the load", idle.fds, end.fds)
	}
	if end.goroutines > idle.goroutines+10 {
		t.Errorf("goroutines: %d idle, %d after the load", idle.goroutines, end.goroutines)
	}
	if end.rssKiB > 4*idle.rssKiB+64<<10 {
		t.Errorf("RSS: %d KiB idle, %d KiB after the load", idle.rssKiB, end.rssKiB)
	}
}

// soakRound is one client's round of the mixed load.
func soakRound(b *testenv.Broker, worker int, withKey bool, actions, durable *atomic.Int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var opts client.Options
	if withKey {
		sum := sha256.Sum256(fmt.Appendf(nil, "soak %d %d", worker, time.Now().UnixNano()))
		opts.JournalKey = hex.EncodeToString(sum[:])
	}
	opts.RuntimeDir = b.RuntimeDir
	c, err := client.Dial(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	session := fmt.Sprintf("w%d", worker)
	if _, err := c.Call(ctx, "browser.tabs", map[string]any{"sessionId": session, "instanceId": instanceID}); err != nil {
		return fmt.Errorf("tabs: %w", err)
	}
	raw, err := c.Call(ctx, "browser.claim", map[string]any{"sessionId": session, "instanceId": instanceID, "tab": actTab(worker)})
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	var l browser.LeaseResult
	json.Unmarshal(raw, &l)
	var o browser.Observation
	for range 3 {
		raw, err = c.Call(ctx, "browser.observe", map[string]any{"sessionId": session, "leaseId": l.ID})
		if err != nil {
			return fmt.Errorf("observe: %w", err)
		}
		json.Unmarshal(raw, &o)
	}
	for i := range 3 {
		req := map[string]any{"requestId": strconv.Itoa(i), "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
			"action": map[string]any{"kind": "click", "ref": o.Nodes[0].ID}}
		if _, err := c.Call(ctx, "browser.act", map[string]any{"sessionId": session, "request": req}); err != nil {
			return fmt.Errorf("act: %w", err)
		}
		actions.Add(1)
		if withKey {
			durable.Add(1)
		}
	}
	if _, err := c.Call(ctx, "broker.status", nil); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if _, err := c.Call(ctx, "browser.release", map[string]any{"sessionId": session, "leaseId": l.ID}); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// soakSample is what a soak records of the broker process.
type soakSample struct {
	rssKiB, fds, goroutines int
}

func (s soakSample) String() string {
	return fmt.Sprintf("RSS %d KiB, %d fds, %d goroutines", s.rssKiB, s.fds, s.goroutines)
}

func (s soakSample) max(o soakSample) soakSample {
	return soakSample{max(s.rssKiB, o.rssKiB), max(s.fds, o.fds), max(s.goroutines, o.goroutines)}
}

// sample reads the broker's RSS and open descriptors from /proc and its
// goroutines from broker.status.
func sample(t *testing.T, b *testenv.Broker, pid int) soakSample {
	t.Helper()
	var s soakSample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			s.rssKiB, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	s.fds = len(fds)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{RuntimeDir: b.RuntimeDir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.Call(ctx, "broker.status", nil)
	if err != nil {
		t.Fatal(err)
	}
	var st broker.Status
	json.Unmarshal(raw, &st)
	s.goroutines = st.Goroutines
	return s
}
