package mcpserver

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

// A line from the agent socket is read whole up to the limit, and refused
// past it; the end of the stream is an error, not a line.
func TestReadLineLimit(t *testing.T) {
	const limit = 100 << 10 // past the reader's buffer, so lines come in pieces
	at := strings.Repeat("a", limit-1) + "\n"
	past := strings.Repeat("b", limit) + "\n"
	r := bufio.NewReaderSize(strings.NewReader(at+"short\n"+past), 4096)
	if line, err := readLine(r, limit); err != nil || len(line) != limit-1 {
		t.Fatalf("at the limit: %d bytes, %v", len(line), err)
	}
	if line, err := readLine(r, limit); err != nil || string(line) != "short" {
		t.Fatalf("after it: %q, %v", line, err)
	}
	if _, err := readLine(r, limit); err == nil {
		t.Fatal("a line past the limit was read")
	}
	if _, err := readLine(bufio.NewReader(strings.NewReader("no newline")), limit); err != io.EOF {
		t.Fatalf("a torn last line: %v", err)
	}
}

// FuzzReadLine: lines read one by one are the stream's lines, however
// long, as long as each fits the limit.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("one\ntwo\n"), 4)
	f.Add([]byte("\n\n"), 1)
	f.Add([]byte(strings.Repeat("x", 5000)+"\n"), 100)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if limit < 1 || limit > 1<<16 {
			return
		}
		r := bufio.NewReaderSize(bytes.NewReader(data), 16)
		lines := bytes.SplitAfter(data, []byte("\n"))
		for _, want := range lines {
			if len(want) == 0 {
				continue
			}
			got, err := readLine(r, limit)
			switch {
			case want[len(want)-1] != '\n':
				if err == nil {
					t.Fatalf("a torn last line %q was read as %q", want, got)
				}
				return
			case len(want) > limit:
				if err == nil {
					t.Fatalf("a line of %d bytes passed the limit %d", len(want), limit)
				}
				return
			case err != nil || !bytes.Equal(got, want[:len(want)-1]):
				t.Fatalf("line %q read as %q, %v", want, got, err)
			}
		}
	})
}
