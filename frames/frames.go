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
	"bufio"
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
type Reader struct {
	r   *bufio.Reader
	hdr [HeaderSize]byte
	// parsed: the caller parses every payload at once with a parser that
	// refuses what is not JSON (wire.ParseEnvelope), so Read leaves that
	// check to it instead of scanning each payload twice.
	parsed bool
}

// NewReader returns a Reader that reads frames from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10)}
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
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return nil, err // io.EOF at a boundary, io.ErrUnexpectedEOF inside the header
	}
	n := binary.NativeEndian.Uint32(fr.hdr[:])
	if n == 0 {
		return nil, ErrEmpty
	}
	if n > MaxPayload {
		return nil, &TooLargeError{Length: uint64(n)}
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(fr.r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if !utf8.Valid(payload) {
		return nil, ErrInvalidUTF8
	}
	if !fr.parsed && !json.Valid(payload) {
		return nil, ErrInvalidJSON
	}
	return payload, nil
}
