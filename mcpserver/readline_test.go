package mcpserver

import (
	"bufio"
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
