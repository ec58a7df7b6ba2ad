package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// shrinkBuffers sets the socket buffers of both ends to their minimum, so
// that writes fill the socket, meet EAGAIN and go out in part.
func shrinkBuffers(t *testing.T, conns ...net.Conn) {
	t.Helper()
	for _, nc := range conns {
		raw, err := nc.(*net.UnixConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var serr error
		err = raw.Control(func(fd uintptr) {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, 1); serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 1)
			}
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentSendersKeepOrder: frames that many goroutines push at once
// on a real socket arrive every one exactly once, whole, and each
// goroutine's in the order it sent them, whether the socket takes them at
// once or, with tiny buffers and a slow reader, fills and takes them in
// parts.
func TestConcurrentSendersKeepOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		tiny bool
	}{{"roomy socket", false}, {"tiny socket, slow reader", true}} {
		t.Run(tc.name, func(t *testing.T) {
			const senders, each = 8, 200
			a, b := socketPair(t)
			defer b.Close()
			if tc.tiny {
				shrinkBuffers(t, a, b)
			}
			// Room for everything: this test is about order, not the budget.
			c := rpc.New(a, newHandler(), rpc.Limits{MaxBuffered: 64 << 20}, nil)
			go c.Run()
			defer func() { c.Close(); <-c.Done() }()

			var wg sync.WaitGroup
			errs := make(chan error, senders)
			for g := range senders {
				wg.Go(func() {
					for n := range each {
						// Sizes vary from a few bytes to several socket buffers.
						pad := strings.Repeat("x", (g*each+n)*37%9000)
						if err := c.Notify("e", map[string]any{"g": g, "n": n, "pad": pad}); err != nil {
							errs <- fmt.Errorf("sender %d, event %d: %w", g, n, err)
							return
						}
					}
				})
			}

			next := make([]int, senders) // each sender's next n
			fr := frames.NewReader(b)
			for i := range senders * each {
				if tc.tiny && i%50 == 0 {
					time.Sleep(2 * time.Millisecond) // let the socket fill
				}
				b.SetReadDeadline(time.Now().Add(10 * time.Second))
				data, err := fr.Read()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				env, err := wire.ParseEnvelope(data)
				if err != nil {
					t.Fatalf("frame %d is not whole: %v", i, err)
				}
				var v struct {
					G, N int
					Pad  string
				}
				if err := json.Unmarshal(env.Value, &v); err != nil {
					t.Fatal(err)
				}
				if v.G < 0 || v.G >= senders || v.N != next[v.G] || len(v.Pad) != (v.G*each+v.N)*37%9000 {
					t.Fatalf("frame %d: sender %d's event %d (pad %d), want its event %d", i, v.G, v.N, len(v.Pad), next[v.G])
				}
				next[v.G]++
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			// Nothing more: every frame came exactly once.
			b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if data, err := fr.Read(); err == nil {
				t.Fatalf("an extra frame: %s", data)
			}
		})
	}
}

// TestSocketOutputBudget: on a socket whose peer stopped reading, once the
// socket is full, output queues up to MaxBuffered bytes exactly: a call one
// byte past fails QUEUE_FULL and leaves the connection open, one that fills
// the budget exactly is queued, and an event past it closes the connection
// as a slow consumer.
func TestSocketOutputBudget(t *testing.T) {
	const budget = 64 << 10
	a, b := socketPair(t)
	defer b.Close()
	shrinkBuffers(t, a, b)
	c := rpc.New(a, newHandler(), rpc.Limits{MaxBuffered: budget}, nil)
	go c.Run()
	defer func() { c.Close(); <-c.Done() }()

	// Fill the socket until output queues.
	for c.Buffered() == 0 {
		if err := c.Notify("e", strings.Repeat("f", 1000)); err != nil {
			t.Fatalf("filling the socket: %v", err)
		}
	}
	// Nothing more leaves: the peer does not read.
	queued := c.Buffered()
	room := budget - queued
	if room < 100 {
		t.Fatalf("%d bytes queued of %d: no room left to test", queued, budget)
	}
	// A call one byte past the room fails QUEUE_FULL; the connection stays.
	head, _ := wire.Encode(wire.Request("1", "m", json.RawMessage(`{"p":""}`)))
	// call sends a request whose frame is size bytes; id is the transport
	// ID the connection gives it (1, 2, …), which counts in the size.
	call := func(id string, size int) error {
		pad := strings.Repeat("y", size-frames.HeaderSize-len(head)-(len(id)-1))
		_, err := c.Call(context.Background(), "m", map[string]string{"p": pad})
		return err
	}
	if err := call("1", room+1); rpc.CodeOf(err) != wire.CodeQueueFull {
		t.Fatalf("a call one byte past the budget: %v, want QUEUE_FULL", err)
	}
	if got := c.Buffered(); got != queued {
		t.Fatalf("%d bytes queued after a refused call, want %d", got, queued)
	}
	// A call that fills the room exactly is queued (and waits for ever).
	callErr := make(chan error, 1)
	go func() { callErr <- call("2", room) }()
	for c.Buffered() != budget {
		select {
		case err := <-callErr:
			t.Fatalf("a call filling the budget exactly: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	select {
	case <-c.Closed():
		t.Fatal("closed at the budget")
	default:
	}
	// An event past it closes the connection: a peer that stopped reading
	// cannot be answered truthfully any more.
	err := c.Notify("e", padTo(t, 64))
	if !errors.Is(err, rpc.ErrSlowConsumer) {
		t.Fatalf("an event past the budget: %v, want ErrSlowConsumer", err)
	}
	<-c.Closed()
	if err := <-callErr; rpc.CodeOf(err) != wire.CodeConnectionLost {
		t.Fatalf("the queued call: %v, want CONNECTION_LOST", err)
	}
}
