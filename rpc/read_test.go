package rpc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// TestSocketReadsFramesInAnyPieces: on a real socket, frames that arrive
// split anywhere (inside a header, inside a payload, several in one
// write, a payload larger than the reader's buffer in many writes) are
// each dispatched once and whole, whether the reader finds the
// socket drained between the pieces or not.
func TestSocketReadsFramesInAnyPieces(t *testing.T) {
	h := newHandler()
	_, p := start(t, h, rpc.Limits{})

	var stream []byte
	var want []string
	for i := range 40 {
		size := 1 + i*i*i // up to about 60 KB
		if i == 39 {
			size = 200 << 10 // past the 64 KiB buffer
		}
		params := `{"p":"` + strings.Repeat("y", size) + `"}`
		data, err := wire.Encode(wire.Request(strconv.Itoa(i+1), "echo", json.RawMessage(params)))
		if err != nil {
			t.Fatal(err)
		}
		if stream, err = frames.Append(stream, data); err != nil {
			t.Fatal(err)
		}
		want = append(want, params)
	}
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for rest := stream; len(rest) > 0; {
			n := min(1+rng.IntN(9000), len(rest))
			if rng.IntN(4) == 0 {
				n = min(rng.IntN(6)+1, len(rest)) // a few bytes: often inside a header
			}
			if _, err := p.c.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
			if rng.IntN(3) == 0 {
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond) // let the reader drain the socket
			}
		}
	}()
	got := map[string]string{} // handlers run concurrently: answers in any order
	for range want {
		env := p.read()
		if env == nil || !env.OK {
			t.Fatalf("after %d answers: %v", len(got), env)
		}
		got[env.ID] = string(env.Value)
	}
	for i, w := range want {
		if id := strconv.Itoa(i + 1); got[id] != w {
			t.Errorf("request %s: answered %d bytes, want the echo of its %d", id, len(got[id]), len(w))
		}
	}
}

// TestSocketEOFInsideAFrame: a peer that closes part way through a frame
// ends the connection with io.ErrUnexpectedEOF, after the frames before
// it were answered; a clean close between frames is io.EOF (the peer
// half-closed, see TestHalfClosedPeerGetsItsAnswers). Run many times
// under load, it also catches a reader that waits for the poller after a
// short read: the last bytes and the hang-up can come in one wake-up, and
// only a further read sees the end.
func TestSocketEOFInsideAFrame(t *testing.T) {
	for _, cut := range []int{2, frames.HeaderSize, frames.HeaderSize + 5} {
		t.Run(strconv.Itoa(cut), func(t *testing.T) {
			c, p := start(t, newHandler(), rpc.Limits{})
			p.send(wire.Request("1", "void", nil))
			data, _ := wire.Encode(wire.Request("2", "void", nil))
			frame, _ := frames.Append(nil, data)
			if _, err := p.c.Write(frame[:cut]); err != nil {
				t.Fatal(err)
			}
			if env := p.read(); env == nil || env.ID != "1" {
				t.Fatalf("the whole frame before the cut was not answered: %+v", env)
			}
			p.c.Close()
			select {
			case <-c.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the connection did not end")
			}
			if err := c.Err(); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("ended with %v, want io.ErrUnexpectedEOF", err)
			}
		})
	}
}

// TestSocketCloseWhileWaiting: Close ends a reader waiting for the
// socket to become readable, and one that is busy reading a peer that
// never stops sending.
func TestSocketCloseWhileWaiting(t *testing.T) {
	c, p := start(t, newHandler(), rpc.Limits{})
	p.send(wire.Request("1", "void", nil))
	p.read()
	c.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting reader")
	}

	c, p = start(t, dropEvents{newHandler()}, rpc.Limits{})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		data, _ := wire.Encode(wire.Event("tick", nil))
		frame, _ := frames.Append(nil, data)
		burst := bytes.Repeat(frame, 500)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := p.c.Write(burst); err != nil {
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	c.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a busy reader")
	}
}

// dropEvents is a handler that ignores events: a stream of them never
// fills a queue.
type dropEvents struct{ *handler }

func (dropEvents) Event(*wire.Envelope) {}
