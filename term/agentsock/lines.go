package agentsock

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLine bounds one request line, without its newline. It leaves
// room for a control request's 64 KiB original payload several times over
// (JSON escaping can double a string) and keeps a flood cheap.
const DefaultMaxLine = 256 << 10

// ErrLineTooLong is returned for a line longer than the limit. The line is
// skipped up to its newline, and the next line reads normally.
var ErrLineTooLong = errors.New("agentsock: line too long")

// lineReader splits a stream into newline-terminated lines of at most max
// bytes. A final line without a newline is a line too.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its "\n" (or "\r\n"). The slice is
// valid until the next call. At the end of the stream it returns io.EOF.
func (l *lineReader) Next() ([]byte, error) {
	l.buf = l.buf[:0]
	long := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !long {
			if len(l.buf)+len(chunk) > l.max+2 { // room for "\r\n" before deciding
				long = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if long {
				return nil, ErrLineTooLong
			}
			line := trimEOL(l.buf)
			if len(line) > l.max {
				return nil, ErrLineTooLong
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if long {
				return nil, ErrLineTooLong
			}
			if len(l.buf) == 0 {
				return nil, io.EOF
			}
			line := trimEOL(l.buf)
			if len(line) > l.max {
				return nil, ErrLineTooLong
			}
			l.buf = l.buf[:0]
			return line, nil
		default:
			return nil, err
		}
	}
}

// Buffered reports how many bytes were read from the stream but not yet
// returned.
func (l *lineReader) Buffered() int { return l.r.Buffered() }

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
