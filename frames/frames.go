// Package frames reads and writes the length-prefixed frames that carry the
// v1 protocol on Native Messaging stdio and on the broker's Unix socket.
//
// A frame is a four-byte length in the machine's native byte order followed
// by that many bytes of UTF-8 JSON. The length must be nonzero and at most
// [MaxPayload]; it is checked before anything is allocated. A payload that is
// not valid UTF-8 or not a single JSON value is rejected.
//
// The same framing is used in both directions and on both transports, so the
// native host relays frames without re-encoding them.
package frames

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxPayload is the largest payload a frame may carry, in bytes. It is one
// byte under Chrome's 1 MiB host-to-browser limit.
const MaxPayload = 1<<20 - 1

// HeaderSize is the size of the length prefix.
const HeaderSize = 4

var (
	// ErrEmpty is returned for a frame whose length prefix is zero.
	ErrEmpty = errors.New("frames: zero-length frame")
	// ErrInvalidUTF8 is returned for a payload that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("frames: payload is not valid UTF-8")
	// ErrInvalidJSON is returned for a payload that is not one JSON value.
	ErrInvalidJSON = errors.New("frames: payload is not valid JSON")
)

// TooLargeError reports a frame whose declared or actual length exceeds
// [MaxPayload].
type TooLargeError struct {
	Length uint64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("frames: payload of %d bytes exceeds the %d-byte limit", e.Length, MaxPayload)
}

// Check reports whether payload may be sent as a frame: nonempty, within
// [MaxPayload], valid UTF-8 and one valid JSON value.
func Check(payload []byte) error {
	switch {
	case len(payload) == 0:
		return ErrEmpty
	case len(payload) > MaxPayload:
		return &TooLargeError{Length: uint64(len(payload))}
	case !utf8.Valid(payload):
		return ErrInvalidUTF8
	case !json.Valid(payload):
		return ErrInvalidJSON
	}
	return nil
}

// AppendEncoded appends the frame for a payload encoded by json.Marshal or
// wire.Encode from marshalled parts, which is valid JSON by construction:
// it checks the length and UTF-8 but does not scan the JSON again.
func AppendEncoded(dst, payload []byte) ([]byte, error) {
	switch {
	case len(payload) == 0:
		return dst, ErrEmpty
	case len(payload) > MaxPayload:
		return dst, &TooLargeError{Length: uint64(len(payload))}
	case !utf8.Valid(payload):
		return dst, ErrInvalidUTF8
	}
	dst = binary.NativeEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...), nil
}

// Seal completes a frame built in place: frame holds [HeaderSize] reserved
// bytes followed by a payload encoded from marshalled parts, as
// [AppendEncoded] takes it. Seal checks the payload's length and UTF-8 as
// AppendEncoded does and writes its length into the header, so a sender
// that reserved the header before encoding sends the frame without
// copying the payload again.
func Seal(frame []byte) error {
	if len(frame) < HeaderSize {
		return ErrEmpty
	}
	payload := frame[HeaderSize:]
	switch {
	case len(payload) == 0:
		return ErrEmpty
	case len(payload) > MaxPayload:
		return &TooLargeError{Length: uint64(len(payload))}
	case !utf8.Valid(payload):
		return ErrInvalidUTF8
	}
	binary.NativeEndian.PutUint32(frame, uint32(len(payload)))
	return nil
}

// Append appends the frame for payload to dst after checking it with [Check].
func Append(dst, payload []byte) ([]byte, error) {
	if err := Check(payload); err != nil {
		return dst, err
	}
	dst = binary.NativeEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...), nil
}

// Write writes payload to w as one frame, with a single Write call so that
// concurrent writers on a stream never interleave partial frames.
func Write(w io.Writer, payload []byte) error {
	buf, err := Append(make([]byte, 0, HeaderSize+len(payload)), payload)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// Reader reads frames from a stream.
//
// It keeps the bytes it has read but not yet returned in a buffer of its
// own, so that a caller reading the stream itself ([Reader.Fill]) can take
// every frame that one read brought ([Reader.Next]) before reading again.
type Reader struct {
	src io.Reader
	buf []byte // bytes read and not yet returned are buf[r:w]
	r   int
	w   int
	// body is a payload too large for buf, read straight into its own
	// allocation; got is how much of it has arrived. nil otherwise.
	body []byte
	got  int
	// err is the error src returned, kept until the frames read before it
	// are taken, then returned once.
	err error
	// parsed: the caller parses every payload at once with a parser that
	// refuses what is not JSON (wire.ParseEnvelope), so Read leaves that
	// check to it instead of scanning each payload twice.
	parsed bool
}

// bufferSize is the size of a Reader's buffer: a read takes up to this
// much of the stream at once, whatever the frames in it.
const bufferSize = 64 << 10

// NewReader returns a Reader that reads frames from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: r}
}

// NewParsedReader returns a Reader for a caller that hands every payload to
// a validating JSON parser at once (rpc, with wire.ParseEnvelope): it
// checks lengths and UTF-8 like NewReader's and leaves the JSON check to
// that parser, which refuses exactly what it would.
func NewParsedReader(r io.Reader) *Reader {
	fr := NewReader(r)
	fr.parsed = true
	return fr
}

// Read returns the next frame's payload. It returns io.EOF only when the
// stream ends cleanly between frames, and io.ErrUnexpectedEOF when it ends
// inside one. Any other error means the stream is no longer usable: the
// caller must close it.
func (fr *Reader) Read() ([]byte, error) {
	for empty := 0; ; {
		if payload, err := fr.Next(); payload != nil || err != nil {
			return payload, err
		}
		if err := fr.err; err != nil {
			fr.err = nil // returned once, as bufio does: after a read deadline, reading goes on
			return nil, fr.ended(err)
		}
		n, err := fr.Fill(fr.src.Read)
		if err != nil {
			fr.err = err
		}
		if n > 0 || err != nil {
			empty = 0
		} else if empty++; empty >= 100 {
			return nil, io.ErrNoProgress // as bufio: a reader that returns nothing, forever
		}
	}
}

// Next returns the next frame's payload if the bytes read so far hold all
// of it, and nil, nil when more must be read first. An error is the frame's
// (its length or its payload refused); the stream is then no longer
// usable.
func (fr *Reader) Next() ([]byte, error) {
	if fr.body != nil {
		if fr.got < len(fr.body) {
			return nil, nil
		}
		payload := fr.body
		fr.body = nil
		return payload, fr.check(payload)
	}
	if fr.w-fr.r < HeaderSize {
		fr.makeRoom(HeaderSize)
		return nil, nil
	}
	n := binary.NativeEndian.Uint32(fr.buf[fr.r:])
	if n == 0 {
		fr.r += HeaderSize
		return nil, ErrEmpty
	}
	if n > MaxPayload {
		fr.r += HeaderSize
		return nil, &TooLargeError{Length: uint64(n)}
	}
	start, end := fr.r+HeaderSize, fr.r+HeaderSize+int(n)
	if end <= fr.w {
		payload := make([]byte, n)
		copy(payload, fr.buf[start:end])
		fr.r = end
		return payload, fr.check(payload)
	}
	if HeaderSize+int(n) > bufferSize {
		// Larger than the buffer: the rest is read straight into it.
		fr.body = make([]byte, n)
		fr.got = copy(fr.body, fr.buf[start:fr.w])
		fr.r, fr.w = 0, 0
		return nil, nil
	}
	fr.makeRoom(HeaderSize + int(n))
	return nil, nil
}

// makeRoom moves the buffered bytes to the front of the buffer if the
// next need bytes from fr.r would not fit behind them.
func (fr *Reader) makeRoom(need int) {
	if fr.r == fr.w {
		fr.r, fr.w = 0, 0
	} else if fr.r+need > len(fr.buf) {
		fr.w = copy(fr.buf, fr.buf[fr.r:fr.w])
		fr.r = 0
	}
}

// Fill calls read once with the space the next frame needs: the rest of
// a large payload, or the buffer's free space. It returns what read
// returned; n < the space's length means read had no more at the time (a
// socket that was drained). read's io.EOF becomes io.ErrUnexpectedEOF when
// it ends a frame part way. Frames it completes are taken with [Reader.Next].
func (fr *Reader) Fill(read func(p []byte) (int, error)) (int, error) {
	var space []byte
	if fr.body != nil {
		space = fr.body[fr.got:]
	} else {
		if fr.buf == nil {
			fr.buf = make([]byte, bufferSize)
		}
		space = fr.buf[fr.w:]
	}
	n, err := read(space)
	if n < 0 || n > len(space) {
		return 0, fmt.Errorf("frames: a read returned %d bytes for a %d-byte buffer", n, len(space))
	}
	if fr.body != nil {
		fr.got += n
	} else {
		fr.w += n
	}
	if err == io.EOF && n == 0 {
		err = fr.ended(err)
	}
	return n, err
}

// Space returns how many bytes the next [Reader.Fill] offers its read.
func (fr *Reader) Space() int {
	if fr.body != nil {
		return len(fr.body) - fr.got
	}
	if fr.buf == nil {
		return bufferSize
	}
	return len(fr.buf) - fr.w
}

// ended is err as Read returns it at the end of the stream: io.EOF inside
// a frame is io.ErrUnexpectedEOF.
func (fr *Reader) ended(err error) error {
	if err == io.EOF && (fr.body != nil || fr.w > fr.r) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// check refuses a payload that is not UTF-8, or not JSON unless the
// caller parses it.
func (fr *Reader) check(payload []byte) error {
	if !utf8.Valid(payload) {
		return ErrInvalidUTF8
	}
	if !fr.parsed && !json.Valid(payload) {
		return ErrInvalidJSON
	}
	return nil
}
