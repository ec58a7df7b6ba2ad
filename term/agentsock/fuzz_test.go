package agentsock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// chunked reads at most n bytes at a time, to split lines anywhere.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

// FuzzLineReader checks the line decoder against splitting the input on
// newlines: each line comes back whole or as ErrLineTooLong, however the
// input is split, and nothing after an oversized line is lost.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n{\"id\":2}\r\n\nlast"), uint8(3), uint16(8))
	f.Add(bytes.Repeat([]byte("x"), 300), uint8(7), uint16(100))
	f.Add([]byte("a\r\nbb\r\nccc\n"), uint8(1), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, max uint16) {
		limit := int(max%512) + 1
		lr := newLineReader(&chunked{b: data, n: int(chunk%64) + 1}, limit)
		segs := bytes.Split(data, []byte("\n"))
		if len(segs[len(segs)-1]) == 0 {
			segs = segs[:len(segs)-1]
		}
		for i, seg := range segs {
			want := bytes.TrimSuffix(seg, []byte("\r"))
			got, err := lr.Next()
			switch {
			case len(want) > limit:
				if !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("line %d (%d bytes, limit %d): %q, %v; want ErrLineTooLong", i, len(want), limit, got, err)
				}
			case err != nil || !bytes.Equal(got, want):
				t.Fatalf("line %d: %q, %v; want %q", i, got, err, want)
			}
		}
		if _, err := lr.Next(); err != io.EOF {
			t.Fatalf("after the last line: %v", err)
		}
	})
}

// FuzzDecodeRequest checks that any line either decodes to a request with
// an id, a method and object params (without "session"), or is refused
// with an error, never a panic.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"hello","params":{"kind":"agent","name":"x"}}`,
		`{"id":"a","method":"snapshot","params":{"session":"t2"}}`,
		`{"id":2,"method":"type","params":{"text":"ls","session":3}}`,
		`{"id":null,"method":"status"}`, `[]`, `{}`, `{"id":1,"method":""}`, `{"id":1,"method":"x","params":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := decodeRequest(line)
		if r == nil {
			t.Fatal("nil request")
		}
		if err != nil {
			return
		}
		if len(r.id) == 0 || r.method == "" {
			t.Fatalf("accepted %q without id or method", line)
		}
		if r.params != nil {
			var m map[string]json.RawMessage
			if json.Unmarshal(r.params, &m) != nil {
				t.Fatalf("params %q are not an object", r.params)
			}
			if _, ok := m["session"]; ok && r.method != "hello" {
				t.Fatalf("session left in params %q", r.params)
			}
		}
	})
}
