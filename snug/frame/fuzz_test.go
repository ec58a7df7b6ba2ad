package frame_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/dsh-browser/broker/snug/frame"
)

// FuzzParse checks, on any input: Parse does not panic; its verdict is the
// published schema's for the type the text names, the prose refinements
// excepted (and a text without a known type is never accepted); a rejection
// recovers only plausible requestIds and its answer is a valid frame of the
// answer type; and an accepted host frame encodes to a text that parses
// back to the same frame. Seeds are the golden cases.
func FuzzParse(f *testing.F) {
	mustSchemas(f)
	for _, g := range goldens() {
		if len(g.json) <= 16<<10 {
			f.Add([]byte(g.json))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := frame.Parse(data)
		if kind := namedKind(data); kind != "" {
			if _, bad := verdicts(t, kind, data); bad != "" {
				t.Errorf("%s: %s", kind, bad)
			}
		} else if err == nil {
			t.Errorf("accepted %s from a text that names no frame type", fr.FrameType())
		}
		if e, ok := errors.AsType[*frame.Error](err); ok {
			checkRejection(t, e)
		}
		if err == nil {
			checkRoundTrip(t, fr)
		}
	})
}

// namedKind is the kind a JSON object's type member names, if it is one
// of the thirteen.
func namedKind(data []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	var typ string
	if json.Unmarshal(m["type"], &typ) != nil || !frame.Type(typ).Known() {
		return ""
	}
	return kindOf(frame.Type(typ))
}

func checkRejection(t *testing.T, e *frame.Error) {
	t.Helper()
	if n := utf8.RuneCountInString(e.RequestID); e.RequestID != "" && n > frame.MaxIDChars {
		t.Errorf("recovered a requestId of %d characters", n)
	}
	answer, ok := e.Answer()
	if !ok {
		return
	}
	a, err := frame.Parse(answer)
	if err != nil {
		t.Fatalf("the answer to %v does not parse: %v\n%s", e, err, answer)
	}
	var id string
	switch a := a.(type) {
	case *frame.AppResponse:
		id = a.RequestID
		if a.OK || a.Error.Code != e.Code || a.Error.Retryable {
			t.Errorf("answer %s to %v", answer, e)
		}
	case *frame.DBResponse:
		id = a.RequestID
		if a.OK || a.Error.Code != e.Code {
			t.Errorf("answer %s to %v", answer, e)
		}
	case *frame.NetResponse:
		id = a.RequestID
		if a.OK || a.Error.Code != e.Code {
			t.Errorf("answer %s to %v", answer, e)
		}
	case *frame.OpenURLResult:
		id = a.RequestID
		if a.Status != frame.OpenURLRefused {
			t.Errorf("answer %s to %v", answer, e)
		}
	default:
		t.Errorf("answer of type %s to %v", a.FrameType(), e)
	}
	if id != e.RequestID {
		t.Errorf("answer for requestId %q, rejection recovered %q", id, e.RequestID)
	}
}

// checkRoundTrip: a host frame encodes to a text that parses back to a
// frame that encodes the same.
func checkRoundTrip(t *testing.T, fr frame.Frame) {
	t.Helper()
	if fr.FrameType().FromApp() || fr.FrameType() == frame.TypeHostEvent {
		return
	}
	if r, ok := fr.(*frame.NetResponse); ok {
		for name := range r.Headers {
			if !frame.IsWhitelistedResponseHeader(name) {
				return // parsed, but the host never sends it
			}
		}
	}
	first, err := frame.Encode(fr)
	if errors.Is(err, frame.ErrTooLarge) {
		return // escaping can grow a frame near its class
	}
	if err != nil {
		t.Fatalf("Encode of an accepted %s: %v", fr.FrameType(), err)
	}
	back, err := frame.Parse(first)
	if err != nil {
		t.Fatalf("the encoding does not parse: %v\n%s", err, first)
	}
	second, err := frame.Encode(back)
	if err != nil || !bytes.Equal(first, second) {
		t.Fatalf("encoding is not stable (%v):\n%s\n%s", err, first, second)
	}
	again, _ := frame.Parse(second)
	if !reflect.DeepEqual(back, again) {
		t.Fatalf("parse of the same text differs: %+v / %+v", back, again)
	}
}
