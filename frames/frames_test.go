package frames_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/dsh-browser/broker/frames"
)

// header returns a length prefix in the machine's byte order.
func header(n uint32) []byte {
	return binary.NativeEndian.AppendUint32(nil, n)
}

// frame returns a hand-built frame: a header claiming n bytes, then body.
func frame(n uint32, body []byte) []byte {
	return append(header(n), body...)
}

// framed returns the frame for a payload, with the header matching its length.
func framed(payload string) []byte {
	return frame(uint32(len(payload)), []byte(payload))
}

func concat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

// jsonOfSize returns a JSON string literal exactly n bytes long (n >= 2).
func jsonOfSize(n int) []byte {
	b := bytes.Repeat([]byte{'a'}, n)
	b[0], b[n-1] = '"', '"'
	return b
}

// class names the kind of a Read or Check error, so that two errors can be
// compared by what they mean rather than by identity.
func class(err error) string {
	var tooLarge *frames.TooLargeError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case errors.Is(err, frames.ErrEmpty):
		return "empty"
	case errors.Is(err, frames.ErrInvalidUTF8):
		return "invalid UTF-8"
	case errors.Is(err, frames.ErrInvalidJSON):
		return "invalid JSON"
	case errors.As(err, &tooLarge):
		return fmt.Sprintf("too large (%d)", tooLarge.Length)
	}
	return "other: " + err.Error()
}

var (
	maxPayload  = jsonOfSize(frames.MaxPayload)
	overPayload = jsonOfSize(frames.MaxPayload + 1)
)

func TestCheckAppendWrite(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		want    string // class of the error
	}{
		{"object", []byte(`{"type":"cancel","id":"r1"}`), "ok"},
		{"scalar", []byte(`1`), "ok"},
		{"surrounding JSON whitespace", []byte(" \t\r\n{}\n"), "ok"},
		{"multibyte UTF-8", []byte(`"é😀"`), "ok"},
		{"exactly MaxPayload", maxPayload, "ok"},
		{"MaxPayload+1", overPayload, fmt.Sprintf("too large (%d)", frames.MaxPayload+1)},
		{"empty", nil, "empty"},
		{"empty non-nil", []byte{}, "empty"},
		{"invalid UTF-8 in a string", []byte("\"\xff\""), "invalid UTF-8"},
		{"truncated UTF-8", []byte("\"\xc3\""), "invalid UTF-8"},
		{"UTF-16 surrogate encoded in UTF-8", []byte("\"\xed\xa0\x80\""), "invalid UTF-8"},
		{"unterminated object", []byte(`{`), "invalid JSON"},
		{"two values", []byte(`1 2`), "invalid JSON"},
		{"two objects", []byte(`{}{}`), "invalid JSON"},
		{"whitespace only", []byte(" "), "invalid JSON"},
		{"trailing garbage", []byte(`{"a":1}x`), "invalid JSON"},
		{"non-breaking space is not JSON whitespace", []byte("\u00a0{}"), "invalid JSON"},
		{"byte order mark", []byte("\ufeff{}"), "invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := class(frames.Check(tc.payload)); got != tc.want {
				t.Errorf("Check = %s, want %s", got, tc.want)
			}

			prefix := []byte("prefix")
			got, err := frames.Append(bytes.Clone(prefix), tc.payload)
			if class(err) != tc.want {
				t.Errorf("Append error = %s, want %s", class(err), tc.want)
			}
			want := prefix
			if tc.want == "ok" {
				want = concat(prefix, framed(string(tc.payload)))
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Append returned %d bytes, want %d", len(got), len(want))
			}

			var w countingWriter
			err = frames.Write(&w, tc.payload)
			if class(err) != tc.want {
				t.Errorf("Write error = %s, want %s", class(err), tc.want)
			}
			switch {
			case tc.want != "ok" && w.calls != 0:
				t.Errorf("Write wrote %d times for a rejected payload", w.calls)
			case tc.want == "ok" && w.calls != 1:
				t.Errorf("Write made %d Write calls, want exactly one", w.calls)
			}
			if !bytes.Equal(w.buf.Bytes(), want[len(prefix):]) {
				t.Errorf("Write wrote %d bytes, want %d", w.buf.Len(), len(want)-len(prefix))
			}
		})
	}
}

type countingWriter struct {
	buf   bytes.Buffer
	calls int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.calls++
	return w.buf.Write(p)
}

func TestWriteError(t *testing.T) {
	want := errors.New("broken pipe")
	if err := frames.Write(errWriter{want}, []byte(`{}`)); err != want {
		t.Errorf("Write = %v, want the writer's error", err)
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

func TestNativeByteOrder(t *testing.T) {
	// 0x0102 bytes: the two orders give different headers.
	payload := jsonOfSize(0x0102)
	got, err := frames.Append(nil, payload)
	if err != nil {
		t.Fatal(err)
	}
	var want [frames.HeaderSize]byte
	binary.NativeEndian.PutUint32(want[:], uint32(len(payload)))
	if !bytes.Equal(got[:frames.HeaderSize], want[:]) {
		t.Errorf("header = % x, want native-endian % x", got[:frames.HeaderSize], want)
	}

	fr := frames.NewReader(bytes.NewReader(got))
	p, err := fr.Read()
	if err != nil || !bytes.Equal(p, payload) {
		t.Errorf("Read of a native-endian frame = %d bytes, %v", len(p), err)
	}

	// The same frame with the other byte order is misread, by design.
	var foreign binary.AppendByteOrder = binary.LittleEndian
	if binary.NativeEndian.Uint32(want[:]) == binary.LittleEndian.Uint32(want[:]) {
		foreign = binary.BigEndian
	}
	other := foreign.AppendUint32(nil, uint32(len(payload)))
	_, err = frames.NewReader(bytes.NewReader(concat(other, payload))).Read()
	if err == nil {
		t.Error("a frame with a foreign-endian header was accepted")
	}
}

// readAll reads frames until the first error and returns them with it.
func readAll(r io.Reader) ([][]byte, error) {
	fr := frames.NewReader(r)
	var out [][]byte
	for {
		p, err := fr.Read()
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
}

func TestRead(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  []string // payloads returned before the error
		err   string   // class of the error that ends the stream
	}{
		{"clean EOF on empty stream", nil, nil, "EOF"},
		{"one frame", framed(`{"type":"cancel","id":"r1"}`), []string{`{"type":"cancel","id":"r1"}`}, "EOF"},
		{"frames back to back",
			concat(framed(`{}`), framed(`[1,2]`), framed(`"é"`), framed(` null `)),
			[]string{`{}`, `[1,2]`, `"é"`, ` null `}, "EOF"},
		{"one-byte header then EOF", header(2)[:1], nil, "unexpected EOF"},
		{"three-byte header then EOF", header(2)[:3], nil, "unexpected EOF"},
		{"EOF after a frame inside the next header", concat(framed(`{}`), header(2)[:2]), []string{`{}`}, "unexpected EOF"},
		{"EOF right after the header", header(2), nil, "unexpected EOF"},
		{"EOF inside the body", frame(10, []byte(`{"a":`)), nil, "unexpected EOF"},
		{"EOF inside a later body", concat(framed(`1`), frame(3, []byte(`[]`))), []string{`1`}, "unexpected EOF"},
		{"zero length", header(0), nil, "empty"},
		{"zero length after a frame", concat(framed(`{}`), header(0), framed(`{}`)), []string{`{}`}, "empty"},
		{"declared 0xFFFFFFFF with no body", header(0xFFFFFFFF), nil, "too large (4294967295)"},
		{"declared MaxPayload+1 with no body", header(frames.MaxPayload + 1), nil,
			fmt.Sprintf("too large (%d)", frames.MaxPayload+1)},
		{"declared MaxPayload+1 with a full body", framed(string(overPayload)), nil,
			fmt.Sprintf("too large (%d)", frames.MaxPayload+1)},
		{"exactly MaxPayload", framed(string(maxPayload)), []string{string(maxPayload)}, "EOF"},
		{"MaxPayload with one byte missing", frame(frames.MaxPayload, maxPayload[1:]), nil, "unexpected EOF"},
		{"invalid UTF-8", framed("\"\xff\""), nil, "invalid UTF-8"},
		{"invalid JSON", framed(`{"a"}`), nil, "invalid JSON"},
		{"two JSON values", framed(`{} {}`), nil, "invalid JSON"},
		{"whitespace only", framed("\n"), nil, "invalid JSON"},
		{"good frame then bad", concat(framed(`{}`), framed(`nul`)), []string{`{}`}, "invalid JSON"},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"EOF with last data", iotest.DataErrReader},
		{"half reads", iotest.HalfReader},
	}
	for _, tc := range tests {
		for _, rd := range readers {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				got, err := readAll(rd.wrap(bytes.NewReader(tc.input)))
				if class(err) != tc.err {
					t.Errorf("stream ended with %s, want %s", class(err), tc.err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("read %d frames, want %d", len(got), len(tc.want))
				}
				for i := range got {
					if string(got[i]) != tc.want[i] {
						t.Errorf("frame %d = %.40q, want %.40q", i, got[i], tc.want[i])
					}
				}
			})
		}
	}
}

// TestReadError checks that a transport error is returned as it is.
func TestReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(header(8)[:2]), iotest.ErrReader(boom))
	if _, err := frames.NewReader(r).Read(); err != boom {
		t.Errorf("Read = %v, want the transport's error", err)
	}
	r = io.MultiReader(bytes.NewReader(frame(8, []byte(`[`))), iotest.ErrReader(boom))
	if _, err := frames.NewReader(r).Read(); err != boom {
		t.Errorf("Read = %v, want the transport's error", err)
	}
}

// repeating is an endless stream of the same bytes.
type repeating struct {
	pattern []byte
	off     int
}

func (r *repeating) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.pattern[r.off]
		r.off = (r.off + 1) % len(r.pattern)
	}
	return len(p), nil
}

// TestReadTooLargeDoesNotAllocate checks that the length is rejected before
// the body is allocated: each Read of an over-limit header may allocate only
// the error.
func TestReadTooLargeDoesNotAllocate(t *testing.T) {
	for _, n := range []uint32{frames.MaxPayload + 1, 0xFFFFFFFF} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			fr := frames.NewReader(&repeating{pattern: header(n)})
			var err error
			allocs := testing.AllocsPerRun(100, func() { _, err = fr.Read() })
			var tooLarge *frames.TooLargeError
			if !errors.As(err, &tooLarge) || tooLarge.Length != uint64(n) {
				t.Fatalf("Read = %v, want *TooLargeError{%d}", err, n)
			}
			if allocs > 1 {
				t.Errorf("Read allocated %v times per over-limit header, want at most 1 (the error)", allocs)
			}
		})
	}
}

func TestTooLargeError(t *testing.T) {
	err := &frames.TooLargeError{Length: frames.MaxPayload + 1}
	if msg := err.Error(); !strings.Contains(msg, "1048576") || !strings.Contains(msg, "1048575") {
		t.Errorf("Error() = %q, want both the length and the limit", msg)
	}
}

// chunkReader returns its data in random pieces of 1 to 7 bytes.
type chunkReader struct {
	data []byte
	rng  *rand.PCG
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(1+int(r.rng.Uint64()%7), len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func FuzzRead(f *testing.F) {
	seeds := [][]byte{
		nil,
		framed(`{"type":"request","id":"r1","method":"browser.instances","params":{}}`),
		concat(framed(`{}`), framed(`[1,"é"]`), framed(`null`)),
		concat(framed(`{}`), header(3)),
		header(0),
		header(0xFFFFFFFF),
		header(frames.MaxPayload + 1),
		header(frames.MaxPayload),
		header(7)[:3],
		framed("\"\xff\""),
		framed(`{} {}`),
		framed(`{"a":`),
		frame(2, []byte(`{}{}`)),
		frame(1, nil),
	}
	for i, s := range seeds {
		f.Add(s, uint64(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		got, err := readAll(bytes.NewReader(data))

		// Every accepted payload is a valid frame payload, and re-encoding
		// it gives back exactly the bytes the reader consumed.
		off := 0
		for i, p := range got {
			if err := frames.Check(p); err != nil {
				t.Fatalf("frame %d was accepted but fails Check: %v", i, err)
			}
			enc, err := frames.Append(nil, p)
			if err != nil {
				t.Fatalf("frame %d: Append: %v", i, err)
			}
			if end := off + len(enc); end > len(data) || !bytes.Equal(enc, data[off:end]) {
				t.Fatalf("frame %d re-encodes to %x, not the consumed bytes", i, enc)
			}
			off += len(enc)
		}
		if errors.Is(err, io.EOF) && off != len(data) {
			t.Fatalf("io.EOF with %d bytes unread", len(data)-off)
		}

		// Delivery in pieces changes nothing.
		pieces := []struct {
			name string
			r    io.Reader
		}{
			{"one byte at a time", iotest.OneByteReader(bytes.NewReader(data))},
			{"random chunks", &chunkReader{data: data, rng: rand.NewPCG(seed, 1)}},
		}
		for _, pc := range pieces {
			got2, err2 := readAll(pc.r)
			if class(err2) != class(err) {
				t.Fatalf("%s: stream ended with %s, want %s", pc.name, class(err2), class(err))
			}
			if len(got2) != len(got) {
				t.Fatalf("%s: read %d frames, want %d", pc.name, len(got2), len(got))
			}
			for i := range got {
				if !bytes.Equal(got[i], got2[i]) {
					t.Fatalf("%s: frame %d differs", pc.name, i)
				}
			}
		}
	})
}

// TestParsedReaderLeavesJSONToTheParser: a parsed reader still refuses
// what is empty, oversized or not UTF-8, and hands over the rest.
func TestParsedReaderLeavesJSONToTheParser(t *testing.T) {
	var buf bytes.Buffer
	for _, p := range []string{`{"a":1}`, `not json`} {
		binary.Write(&buf, binary.NativeEndian, uint32(len(p)))
		buf.WriteString(p)
	}
	buf.Write([]byte{2, 0, 0, 0, 0xff, 0xfe})
	fr := frames.NewParsedReader(&buf)
	for _, want := range []string{`{"a":1}`, `not json`} {
		got, err := fr.Read()
		if err != nil || string(got) != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
	}
	if _, err := fr.Read(); !errors.Is(err, frames.ErrInvalidUTF8) {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	if _, err := frames.AppendEncoded(nil, nil); !errors.Is(err, frames.ErrEmpty) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := frames.AppendEncoded(nil, make([]byte, frames.MaxPayload+1)); err == nil {
		t.Fatal("oversized payload framed")
	}
}

// TestSeal: a frame built in place reads back as its payload, at the size
// limit too; an empty, oversized or non-UTF-8 payload is refused.
func TestSeal(t *testing.T) {
	for _, payload := range [][]byte{[]byte(`{"a":1}`), append(append([]byte{'"'}, bytes.Repeat([]byte{'x'}, frames.MaxPayload-2)...), '"')} {
		frame := append(make([]byte, frames.HeaderSize), payload...)
		if err := frames.Seal(frame); err != nil {
			t.Fatalf("Seal of %d bytes: %v", len(payload), err)
		}
		got, err := frames.NewReader(bytes.NewReader(frame)).Read()
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("read back %d bytes, %v; want %d", len(got), err, len(payload))
		}
	}
	cases := []struct {
		name  string
		frame []byte
		want  func(error) bool
	}{
		{"no header", []byte{1, 2}, func(err error) bool { return errors.Is(err, frames.ErrEmpty) }},
		{"empty payload", make([]byte, frames.HeaderSize), func(err error) bool { return errors.Is(err, frames.ErrEmpty) }},
		{"one byte past the limit", make([]byte, frames.HeaderSize+frames.MaxPayload+1), func(err error) bool {
			_, ok := errors.AsType[*frames.TooLargeError](err)
			return ok
		}},
		{"invalid UTF-8", []byte{0, 0, 0, 0, '"', 0xff, '"'}, func(err error) bool { return errors.Is(err, frames.ErrInvalidUTF8) }},
	}
	for _, tc := range cases {
		if err := frames.Seal(tc.frame); !tc.want(err) {
			t.Errorf("%s: Seal = %v", tc.name, err)
		}
	}
}
