package hub

import (
	"bytes"
	"testing"

	"github.com/dsh-browser/broker/snug/apps"
)

// FuzzAssembly: whatever pieces arrive, in whatever order, a message comes
// out only whole — the bytes of its pieces 0..n in order, one seq — and
// never over apps.MaxRelayBytes.
func FuzzAssembly(f *testing.F) {
	f.Add([]byte{1, 0, 1, 5}, []byte("hello"))
	f.Add([]byte{1, 0, 0, 3, 1, 1, 1, 3}, []byte("abcdef"))
	f.Add([]byte{2, 0, 0, 1, 1, 0, 1, 1, 2, 1, 1, 1}, []byte("xyz"))
	f.Fuzz(func(t *testing.T, script, data []byte) {
		var a assembly
		type piece struct {
			seq  int64
			part int
			last bool
			data []byte
		}
		var sent []piece
		for i := 0; i+3 < len(script); i += 4 {
			n := min(int(script[i+3]), len(data))
			p := piece{seq: int64(script[i]), part: int(script[i+1]), last: script[i+2]&1 == 1, data: data[:n]}
			sent = append(sent, p)
			out, ok := a.add(p.seq, p.part, p.last, p.data)
			if !ok {
				continue
			}
			// The message is pieces 0..p.part of p.seq, the last ones sent.
			var want []byte
			k := len(sent) - 1 - p.part
			if k < 0 {
				t.Fatalf("a message of %d parts from %d pieces", p.part+1, len(sent))
			}
			for j, q := range sent[k:] {
				if q.seq != p.seq || q.part != j {
					t.Fatalf("a message from pieces out of order: %+v", sent[k:])
				}
				want = append(want, q.data...)
			}
			if !bytes.Equal(out, want) || len(out) > apps.MaxRelayBytes {
				t.Fatalf("message %q, want %q", out, want)
			}
		}
	})
}

func TestAssemblyBound(t *testing.T) {
	piece := make([]byte, apps.MaxPieceBytes)
	parts := apps.MaxRelayBytes / apps.MaxPieceBytes // 24: exactly the bound
	var a assembly
	for i := range parts {
		out, ok := a.add(1, i, i == parts-1, piece)
		if i == parts-1 && (!ok || len(out) != apps.MaxRelayBytes) {
			t.Fatalf("at the bound: %d %v", len(out), ok)
		}
	}
	// The same, and one byte more in a last piece of its own.
	for i := range parts {
		a.add(2, i, false, piece)
	}
	if _, ok := a.add(2, parts, true, []byte{1}); ok {
		t.Fatal("one byte past the bound made a message")
	}
	if out, ok := a.add(3, 0, true, []byte("next")); !ok || string(out) != "next" {
		t.Fatal("the next message after a discarded one was lost")
	}
}
