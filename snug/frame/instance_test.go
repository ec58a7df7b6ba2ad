package frame_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-browser/broker/snug/frame"
)

// wire records what an Instance sends.
type wire struct {
	mu     sync.Mutex
	frames [][]byte
}

func (w *wire) send(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.frames = append(w.frames, append([]byte(nil), b...))
}

// take returns the frames sent since the last take, parsed.
func (w *wire) take(t *testing.T) []frame.Frame {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]frame.Frame, len(w.frames))
	for i, b := range w.frames {
		f, err := frame.Parse(b)
		if err != nil {
			t.Fatalf("the instance sent an invalid frame: %v\n%s", err, b)
		}
		out[i] = f
	}
	w.frames = nil
	return out
}

var testReady = frame.HostReady{
	Capabilities: frame.Capabilities{Streaming: true, DB: true, Net: true, OpenURL: true},
	Theme:        frame.ThemeLight,
	Locale:       "en-US",
}

// mustLoaded returns an instance whose document has loaded, and its wire
// after the host-ready.
func mustLoaded(t *testing.T) (*frame.Instance, *wire) {
	t.Helper()
	w := &wire{}
	in, err := frame.NewInstance(testReady, w.send)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Load(); err != nil {
		t.Fatal(err)
	}
	w.take(t)
	return in, w
}

// request texts, for instance id.
func msgText(id, instance string) string {
	return appMessage.set("requestId", jstr(id)).set("instanceId", jstr(instance)).String()
}
func dbText(id, instance string) string {
	return dbExec.set("requestId", jstr(id)).set("instanceId", jstr(instance)).String()
}
func netText(id, instance string) string {
	return netRequest.set("requestId", jstr(id)).set("instanceId", jstr(instance)).String()
}
func openText(id, instance string) string {
	return openURL.set("requestId", jstr(id)).set("instanceId", jstr(instance)).String()
}

func mustAccept(t *testing.T, in *frame.Instance, text string) *frame.Pending {
	t.Helper()
	got, err := in.Receive(context.Background(), []byte(text))
	if err != nil || got.Request == nil {
		t.Fatalf("Receive = %+v, %v; want an accepted request\n%s", got, err, text)
	}
	return got.Request
}

// errorOf returns the requestId and error code of an error answer, or of
// an open-url refusal (its code is the reason's first word).
func errorOf(t *testing.T, f frame.Frame) (id, code string) {
	t.Helper()
	switch f := f.(type) {
	case *frame.AppResponse:
		if f.Error != nil {
			return f.RequestID, f.Error.Code
		}
	case *frame.DBResponse:
		if f.Error != nil {
			return f.RequestID, f.Error.Code
		}
	case *frame.NetResponse:
		if f.Error != nil {
			return f.RequestID, f.Error.Code
		}
	case *frame.OpenURLResult:
		if f.Status == frame.OpenURLRefused {
			code, _, _ := strings.Cut(f.Reason, ":")
			return f.RequestID, code
		}
	}
	t.Fatalf("%T %+v is not an error answer", f, f)
	return "", ""
}

func TestNewInstanceID(t *testing.T) {
	pattern := regexp.MustCompile(`^ins-[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := frame.NewInstanceID()
		if !pattern.MatchString(id) || seen[id] {
			t.Fatalf("instanceId %q: not 128 fresh random bits", id)
		}
		seen[id] = true
	}
}

func TestNewInstanceRefusesAnInvalidTemplate(t *testing.T) {
	bad := testReady
	bad.Theme = "sepia"
	if _, err := frame.NewInstance(bad, func([]byte) {}); err == nil {
		t.Error("NewInstance accepted a host-ready that does not encode")
	}
}

// TestLoad: every load sends host-ready under a new instanceId.
func TestLoad(t *testing.T) {
	w := &wire{}
	in, _ := frame.NewInstance(testReady, w.send)
	var ids []string
	for range 2 {
		if err := in.Load(); err != nil {
			t.Fatal(err)
		}
		fs := w.take(t)
		r, ok := fs[0].(*frame.HostReady)
		if len(fs) != 1 || !ok {
			t.Fatalf("Load sent %+v, want one host-ready", fs)
		}
		want := testReady
		want.InstanceID, want.ProtocolVersions = in.ID(), []int{1}
		if fmt.Sprint(*r) != fmt.Sprint(want) {
			t.Errorf("host-ready = %+v, want %+v", *r, want)
		}
		ids = append(ids, r.InstanceID)
	}
	if ids[0] == ids[1] {
		t.Error("a reload kept the instanceId")
	}
}

// TestAnnounce: an announce is acknowledged with host-ready; a second one
// supersedes every request in flight, whatever its kind, and rotates the
// instanceId (R4).
func TestAnnounce(t *testing.T) {
	in, w := mustLoaded(t)
	old := in.ID()
	got, err := in.Receive(context.Background(), []byte(announce.String()))
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := got.Frame.(*frame.AppAnnounce); !ok || a.DisplayName != "Notes" || got.Request != nil {
		t.Errorf("Receive(announce) = %+v", got)
	}
	if fs := w.take(t); len(fs) != 1 || fs[0].(*frame.HostReady).InstanceID != old {
		t.Fatalf("first announce: sent %+v, want host-ready for the same instance", fs)
	}

	pending := []*frame.Pending{
		mustAccept(t, in, msgText("m1", old)), mustAccept(t, in, dbText("d1", old)),
		mustAccept(t, in, netText("n1", old)), mustAccept(t, in, openText("o1", old)),
	}
	if _, err := in.Receive(context.Background(), []byte(announce.String())); err != nil {
		t.Fatal(err)
	}
	fs := w.take(t)
	if len(fs) != 5 {
		t.Fatalf("re-announce sent %d frames, want 4 SUPERSEDED and host-ready", len(fs))
	}
	wantTypes := []frame.Type{frame.TypeAppResponse, frame.TypeDBResponse, frame.TypeNetResponse, frame.TypeOpenURLResult}
	for i, want := range []string{"m1", "d1", "n1", "o1"} {
		if fs[i].FrameType() != wantTypes[i] {
			t.Errorf("frame %d is a %s, want %s", i, fs[i].FrameType(), wantTypes[i])
		}
		if id, code := errorOf(t, fs[i]); id != want || code != frame.CodeSuperseded {
			t.Errorf("frame %d answers %s with %s, want %s SUPERSEDED", i, id, code, want)
		}
	}
	ready := fs[4].(*frame.HostReady)
	if ready.InstanceID == old || ready.InstanceID != in.ID() {
		t.Errorf("host-ready after re-announce has instanceId %q (old %q, now %q)", ready.InstanceID, old, in.ID())
	}
	for _, p := range pending {
		if p.Context().Err() == nil {
			t.Error("a superseded request's context is not done")
		}
		if err := p.Respond(&frame.AppResponse{OK: true, Data: json.RawMessage(`{}`)}); !errors.Is(err, frame.ErrClosed) {
			t.Errorf("Respond after supersede = %v, want ErrClosed", err)
		}
	}
	// Frames for the old instance are dropped silently.
	for _, text := range []string{msgText("m2", old), appCancel.set("instanceId", jstr(old)).String()} {
		if _, err := in.Receive(context.Background(), []byte(text)); !errors.Is(err, frame.ErrStale) {
			t.Errorf("Receive for the old instance = %v, want ErrStale", err)
		}
	}
	if fs := w.take(t); len(fs) != 0 {
		t.Errorf("sent %d frames after supersede, want none", len(fs))
	}
	// The requestIds of the old instance may be used again by the new one.
	mustAccept(t, in, msgText("m1", in.ID()))
}

// TestExactlyOneTerminal: the first answer is the only one (R3).
func TestExactlyOneTerminal(t *testing.T) {
	in, w := mustLoaded(t)
	p := mustAccept(t, in, msgText("r1", in.ID()))
	if err := p.Respond(&frame.AppResponse{OK: true, Data: json.RawMessage(`{"message":"hi"}`)}); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Respond": p.Respond(&frame.AppResponse{OK: true, Data: json.RawMessage(`{}`)}),
		"Fail":    p.Fail(frame.ResponseError{Code: frame.CodeHostError}),
		"Stream":  p.Stream("late"),
	} {
		if !errors.Is(err, frame.ErrClosed) {
			t.Errorf("%s after the terminal answer = %v, want ErrClosed", name, err)
		}
	}
	p.Close()
	fs := w.take(t)
	if len(fs) != 1 {
		t.Fatalf("sent %d frames, want the one terminal answer", len(fs))
	}
	if r := fs[0].(*frame.AppResponse); !r.OK || r.Streaming || string(r.Data) != `{"message":"hi"}` || r.RequestID != "r1" {
		t.Errorf("terminal answer %+v", r)
	}
	if p.Context().Err() == nil {
		t.Error("an answered request's context is not done")
	}
}

// TestStream: streaming frames carry the cumulative text and a rising seq,
// before the terminal one only.
func TestStream(t *testing.T) {
	in, w := mustLoaded(t)
	p := mustAccept(t, in, msgText("r1", in.ID()))
	for _, d := range []string{"Hel", "lo", ", world"} {
		if err := p.Stream(d); err != nil {
			t.Fatal(err)
		}
	}
	fs := w.take(t)
	for i, want := range []string{"Hel", "Hello", "Hello, world"} {
		r := fs[i].(*frame.AppResponse)
		if !r.OK || !r.Streaming || r.Text != want || r.Seq == nil || *r.Seq != int64(i) {
			t.Errorf("streaming frame %d = %+v, want text %q seq %d", i, r, want, i)
		}
	}
	db := mustAccept(t, in, dbText("d1", in.ID()))
	if err := db.Stream("x"); err == nil || errors.Is(err, frame.ErrClosed) {
		t.Errorf("Stream on a db-request = %v, want a refusal", err)
	}
}

// TestStreamOverflow: a streaming frame that would outgrow its class is
// skipped, and so are the later ones; the terminal answer still goes.
func TestStreamOverflow(t *testing.T) {
	in, w := mustLoaded(t)
	p := mustAccept(t, in, msgText("r1", in.ID()))
	if err := p.Stream(strings.Repeat("a", frame.MaxFrameBytes-200)); err != nil {
		t.Fatal(err)
	}
	if err := p.Stream(strings.Repeat("b", 300)); !errors.Is(err, frame.ErrTooLarge) {
		t.Errorf("an over-size streaming frame: %v, want ErrTooLarge", err)
	}
	if err := p.Stream("c"); !errors.Is(err, frame.ErrTooLarge) {
		t.Errorf("a streaming frame after the overflow: %v, want ErrTooLarge", err)
	}
	if err := p.Respond(&frame.AppResponse{OK: true, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if fs := w.take(t); len(fs) != 2 || fs[1].(*frame.AppResponse).Streaming {
		t.Errorf("sent %d frames, want one streaming and the terminal one", len(fs))
	}
}

// TestCancel: app-cancel ends an app-message CANCELLED; other requests are
// not cancelled.
func TestCancel(t *testing.T) {
	in, w := mustLoaded(t)
	msg := mustAccept(t, in, msgText("r1", in.ID()))
	db := mustAccept(t, in, dbText("d1", in.ID()))
	cancel := func(id string) {
		t.Helper()
		got, err := in.Receive(context.Background(), []byte(appCancel.set("requestId", jstr(id)).set("instanceId", jstr(in.ID())).String()))
		if err != nil || got.Request != nil || got.Frame.FrameType() != frame.TypeAppCancel {
			t.Fatalf("Receive(cancel %s) = %+v, %v", id, got, err)
		}
	}
	cancel("r1")
	cancel("d1")
	cancel("unknown")
	fs := w.take(t)
	if len(fs) != 1 {
		t.Fatalf("cancels sent %d frames, want one CANCELLED", len(fs))
	}
	if id, code := errorOf(t, fs[0]); id != "r1" || code != frame.CodeCancelled {
		t.Errorf("cancel answered %s %s", id, code)
	}
	if msg.Context().Err() == nil {
		t.Error("the cancelled request's context is not done")
	}
	if db.Context().Err() != nil {
		t.Error("a db-request was cancelled")
	}
	if err := db.Respond(&frame.DBResponse{OK: true}); err != nil {
		t.Errorf("the db-request could not be answered after a cancel: %v", err)
	}
}

// TestDuplicateRequestID: a requestId is unique per instance (R4). One in
// flight is dropped silently (its only answer stays its own, R3); one
// already answered is refused.
func TestDuplicateRequestID(t *testing.T) {
	in, w := mustLoaded(t)
	p := mustAccept(t, in, msgText("r1", in.ID()))
	for _, text := range []string{msgText("r1", in.ID()), dbText("r1", in.ID())} {
		if _, err := in.Receive(context.Background(), []byte(text)); !errors.Is(err, frame.ErrDuplicate) {
			t.Errorf("Receive of an in-flight requestId = %v, want ErrDuplicate", err)
		}
	}
	if fs := w.take(t); len(fs) != 0 {
		t.Fatalf("a duplicate of an in-flight requestId was answered: %+v", fs)
	}
	p.Fail(frame.ResponseError{Code: frame.CodeHostError, Message: "x"})
	w.take(t)
	if _, err := in.Receive(context.Background(), []byte(netText("r1", in.ID()))); !errors.Is(err, frame.ErrDuplicate) {
		t.Errorf("Receive of an answered requestId = %v, want ErrDuplicate", err)
	}
	fs := w.take(t)
	if len(fs) != 1 || fs[0].FrameType() != frame.TypeNetResponse {
		t.Fatalf("reuse answered %+v, want one net-response", fs)
	}
	if id, code := errorOf(t, fs[0]); id != "r1" || code != frame.CodeHostError || fs[0].(*frame.NetResponse).Error.Retryable {
		t.Errorf("reuse answered %s %s", id, code)
	}
}

// TestRememberedRequestIDs: the last RememberedRequestIDs answered ids are
// refused again; one more and the oldest is forgotten.
func TestRememberedRequestIDs(t *testing.T) {
	in, w := mustLoaded(t)
	answer := func(id string) {
		if err := mustAccept(t, in, dbText(id, in.ID())).Respond(&frame.DBResponse{OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range frame.RememberedRequestIDs {
		answer(fmt.Sprint("r", i))
	}
	w.take(t)
	reuse := func(id string) error {
		_, err := in.Receive(context.Background(), []byte(dbText(id, in.ID())))
		return err
	}
	if err := reuse("r0"); !errors.Is(err, frame.ErrDuplicate) {
		t.Fatalf("the oldest of %d answered ids: %v, want ErrDuplicate", frame.RememberedRequestIDs, err)
	}
	answer(fmt.Sprint("r", frame.RememberedRequestIDs))
	if err := reuse("r0"); err != nil {
		t.Errorf("the oldest of %d+1 answered ids: %v, want it forgotten", frame.RememberedRequestIDs, err)
	}
	if err := reuse("r1"); !errors.Is(err, frame.ErrDuplicate) {
		t.Errorf("the second oldest: %v, want ErrDuplicate", err)
	}
}

// TestInFlightCaps: MaxInFlight per kind, MaxPendingOpenURL for open-url;
// the next one is refused at once, retryable.
func TestInFlightCaps(t *testing.T) {
	in, w := mustLoaded(t)
	for _, k := range []struct {
		prefix string
		text   func(id, instance string) string
		limit  int
	}{{"m", msgText, frame.MaxInFlight}, {"d", dbText, frame.MaxInFlight}, {"n", netText, frame.MaxInFlight}, {"o", openText, frame.MaxPendingOpenURL}} {
		var first *frame.Pending
		prefix := k.prefix
		for i := range k.limit {
			p := mustAccept(t, in, k.text(fmt.Sprint(prefix, i), in.ID()))
			if first == nil {
				first = p
			}
		}
		over := fmt.Sprint(prefix, "over")
		if _, err := in.Receive(context.Background(), []byte(k.text(over, in.ID()))); !errors.Is(err, frame.ErrBusy) {
			t.Fatalf("request %d past the cap of %d: %v, want ErrBusy", k.limit+1, k.limit, err)
		}
		fs := w.take(t)
		if len(fs) != 1 {
			t.Fatalf("the refusal sent %d frames", len(fs))
		}
		id, code := errorOf(t, fs[0])
		if id != over || code != frame.CodeHostError {
			t.Errorf("refusal %s %s", id, code)
		}
		if r, ok := fs[0].(*frame.AppResponse); ok && !r.Error.Retryable {
			t.Error("the refusal is not retryable")
		}
		first.Close()
		w.take(t)
		mustAccept(t, in, k.text(fmt.Sprint(prefix, "after"), in.ID()))
	}
}

// TestRejectedFrames: R1, a rejected frame is answered on the wire only
// when its requestId was recovered and it is a request, never otherwise.
func TestRejectedFrames(t *testing.T) {
	in, w := mustLoaded(t)
	mustAccept(t, in, msgText("busy", in.ID()))
	huge := strings.Repeat("x", frame.MaxFrameBytes)
	for _, tc := range []struct {
		name     string
		text     string
		answer   frame.Type // "" for silence
		code, id string
	}{
		{"app-message without action", appMessage.del("action").String(), frame.TypeAppResponse, frame.CodeMalformed, "r1"},
		{"db-request with a bad op", dbExec.set("op", `"drop"`).String(), frame.TypeDBResponse, frame.CodeMalformed, "d1"},
		{"net-request with a credential header", netGet.set("headers", `{"Authorization":"Bearer x"}`).String(), frame.TypeNetResponse, frame.CodeMalformed, "n1"},
		{"net-request with a body on GET", netGet.set("body", `"x"`).String(), frame.TypeNetResponse, frame.CodeMalformed, "n1"},
		{"open-url to http", openURL.set("url", `"http://example.com/"`).String(), frame.TypeOpenURLResult, frame.CodeMalformed, "o1"},
		{"app-message v 2", appMessage.set("v", "2").String(), frame.TypeAppResponse, frame.CodeUnsupportedVersion, "r1"},
		{"db-request without v", dbExec.del("v").String(), frame.TypeDBResponse, frame.CodeUnsupportedVersion, "d1"},
		{"app-message over 256 KiB", appMessage.set("payload", jstr(huge)).String(), frame.TypeAppResponse, frame.CodeHostError, "r1"},
		{"requestId of 128 characters", appMessage.del("action").set("requestId", jstr(strings.Repeat("😀", 128))).String(), frame.TypeAppResponse, frame.CodeMalformed, strings.Repeat("😀", 128)},
		{"requestId of 129 characters", appMessage.del("action").set("requestId", jstr(strings.Repeat("r", 129))).String(), "", "", ""},
		{"requestId empty", appMessage.del("action").set("requestId", `""`).String(), "", "", ""},
		{"requestId a number", appMessage.del("action").set("requestId", `7`).String(), "", "", ""},
		{"no requestId", appMessage.del("requestId").String(), "", "", ""},
		{"requestId in flight", appMessage.del("action").set("requestId", `"busy"`).String(), "", "", ""},
		{"app-cancel malformed", appCancel.del("instanceId").String(), "", "", ""},
		{"announce malformed", announce.del("displayName").set("requestId", `"r1"`).String(), "", "", ""},
		{"unknown type with v 2", appMessage.set("type", `"snug:future-frame"`).set("v", "2").String(), "", "", ""},
		{"unknown type", appMessage.set("type", `"snug:future-frame"`).String(), "", "", ""},
		{"host-ready echoed back", hostReady.set("requestId", `"r1"`).String(), "", "", ""},
		{"app-response from the app", finalResp.String(), "", "", ""},
		{"app-response malformed from the app", finalResp.del("data").String(), "", "", ""},
		{"not Snug traffic", `{"type":"webpackOk","requestId":"r1"}`, "", "", ""},
		{"not JSON", `{"v":1,`, "", "", ""},
	} {
		_, err := in.Receive(context.Background(), []byte(tc.text))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		fs := w.take(t)
		if tc.answer == "" {
			if len(fs) != 0 {
				t.Errorf("%s: answered %+v, want silence", tc.name, fs)
			}
			continue
		}
		if len(fs) != 1 || fs[0].FrameType() != tc.answer {
			t.Errorf("%s: sent %+v, want one %s", tc.name, fs, tc.answer)
			continue
		}
		if id, code := errorOf(t, fs[0]); id != tc.id || code != tc.code {
			t.Errorf("%s: answered %s %s, want %s %s", tc.name, id, code, tc.id, tc.code)
		}
	}
}

// TestOversizeDBFrameAnswered: a db-request over 8 MiB is refused
// HOST_ERROR before any decoding, with its requestId.
func TestOversizeDBFrameAnswered(t *testing.T) {
	in, w := mustLoaded(t)
	text := dbImport.set("requestId", `"big"`).set("instanceId", jstr(in.ID())).
		set("bytesBase64", jstr(strings.Repeat("A", frame.MaxDBFrameBytes))).String()
	if _, err := in.Receive(context.Background(), []byte(text)); !errors.Is(err, frame.ErrTooLarge) {
		t.Fatalf("Receive = %v, want ErrTooLarge", err)
	}
	fs := w.take(t)
	if len(fs) != 1 {
		t.Fatalf("sent %d frames", len(fs))
	}
	if id, code := errorOf(t, fs[0]); id != "big" || code != frame.CodeHostError || fs[0].FrameType() != frame.TypeDBResponse {
		t.Errorf("answered %s %s %s", fs[0].FrameType(), id, code)
	}
}

// TestRespondReplacesWhatCannotBeSent: an answer that cannot be sent as it
// is still ends the request, with an error in its place (R3, R6).
func TestRespondReplacesWhatCannotBeSent(t *testing.T) {
	big := strings.Repeat("b", frame.MaxNetResponseBodyBytes+100<<10)
	for _, tc := range []struct {
		name    string
		request func(id, instance string) string
		answer  frame.Frame
		fail    *frame.ResponseError
		code    string
		tooBig  bool
	}{
		{"net-response over its class", netText, &frame.NetResponse{OK: true, Status: 200, Body: big}, nil, frame.CodeNetSizeExceeded, true},
		{"db-response over its class", dbText, &frame.DBResponse{OK: true, BytesBase64: strings.Repeat("A", frame.MaxDBFrameBytes)}, nil, frame.CodeHostError, true},
		{"final app-response over its class", msgText, &frame.AppResponse{OK: true, Data: json.RawMessage(`{"a":"` + strings.Repeat("a", frame.MaxFrameBytes) + `"}`)}, nil, frame.CodeHostError, true},
		{"an answer of the wrong type", msgText, &frame.DBResponse{OK: true}, nil, frame.CodeHostError, false},
		{"a streaming answer", msgText, &frame.AppResponse{OK: true, Streaming: true, Text: "x"}, nil, frame.CodeHostError, false},
		{"final data not an object", msgText, &frame.AppResponse{OK: true, Data: json.RawMessage(`[1]`)}, nil, frame.CodeHostError, false},
		{"a header off the whitelist", netText, &frame.NetResponse{OK: true, Status: 200, Headers: map[string]string{"Set-Cookie": "a=b"}}, nil, frame.CodeHostError, false},
		{"status out of range", netText, &frame.NetResponse{OK: true, Status: 700}, nil, frame.CodeHostError, false},
		{"an error without a code", dbText, nil, &frame.ResponseError{Message: "no code"}, frame.CodeHostError, false},
		{"nil", openText, nil, nil, frame.CodeHostError, false},
		{"a nil result", openText, (*frame.OpenURLResult)(nil), nil, frame.CodeHostError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, w := mustLoaded(t)
			p := mustAccept(t, in, tc.request("r1", in.ID()))
			var err error
			if tc.fail != nil {
				err = p.Fail(*tc.fail)
			} else {
				err = p.Respond(tc.answer)
			}
			if err == nil || errors.Is(err, frame.ErrTooLarge) != tc.tooBig {
				t.Errorf("error %v, want one (ErrTooLarge: %v)", err, tc.tooBig)
			}
			fs := w.take(t)
			if len(fs) != 1 {
				t.Fatalf("sent %d frames, want the one terminal answer", len(fs))
			}
			if id, code := errorOf(t, fs[0]); id != "r1" || code != tc.code {
				t.Errorf("answered %s %s, want r1 %s", id, code, tc.code)
			}
			if err := p.Respond(tc.answer); !errors.Is(err, frame.ErrClosed) {
				t.Errorf("a second answer: %v, want ErrClosed", err)
			}
		})
	}
}

// TestAnswersAtTheirClass: answers at the largest size their class allows
// are sent as they are.
func TestAnswersAtTheirClass(t *testing.T) {
	in, w := mustLoaded(t)
	p := mustAccept(t, in, netText("n1", in.ID()))
	body := strings.Repeat("b", frame.MaxNetResponseBodyBytes)
	if err := p.Respond(&frame.NetResponse{OK: true, Status: 200, Headers: map[string]string{"Content-Type": "text/plain"}, Body: body}); err != nil {
		t.Fatalf("a 1 MiB body: %v", err)
	}
	if r := w.take(t)[0].(*frame.NetResponse); !r.OK || len(r.Body) != len(body) {
		t.Error("the 1 MiB body did not cross")
	}
}

func TestPendingClose(t *testing.T) {
	in, w := mustLoaded(t)
	p := mustAccept(t, in, msgText("r1", in.ID()))
	p.Close()
	fs := w.take(t)
	if len(fs) != 1 {
		t.Fatalf("Close sent %d frames", len(fs))
	}
	if r := fs[0].(*frame.AppResponse); r.Error == nil || r.Error.Code != frame.CodeHostError || !r.Error.Retryable {
		t.Errorf("Close answered %+v, want HOST_ERROR, retryable", r)
	}
}

func TestFailClampsTheMessage(t *testing.T) {
	in, w := mustLoaded(t)
	p := mustAccept(t, in, openText("o1", in.ID()))
	p.Fail(frame.ResponseError{Code: frame.CodeHostError, Message: strings.Repeat("😀", 500)})
	r := w.take(t)[0].(*frame.OpenURLResult)
	if r.Status != frame.OpenURLRefused || len([]rune(r.Reason)) > frame.MaxOpenURLReasonChars || !strings.HasPrefix(r.Reason, "HOST_ERROR: ") {
		t.Errorf("open-url refusal %q", r.Reason)
	}
	q := mustAccept(t, in, msgText("r1", in.ID()))
	q.Fail(frame.ResponseError{Code: frame.CodeHostError, Message: strings.Repeat("m", 5000)})
	if e := w.take(t)[0].(*frame.AppResponse).Error; len(e.Message) != frame.MaxErrorMessageChars {
		t.Errorf("message of %d characters, want it clamped to %d", len(e.Message), frame.MaxErrorMessageChars)
	}
}

// TestClose: closing supersedes everything in flight and sends nothing
// after.
func TestClose(t *testing.T) {
	in, w := mustLoaded(t)
	p := mustAccept(t, in, netText("n1", in.ID()))
	in.Close()
	fs := w.take(t)
	if len(fs) != 1 {
		t.Fatalf("Close sent %d frames", len(fs))
	}
	if id, code := errorOf(t, fs[0]); id != "n1" || code != frame.CodeSuperseded {
		t.Errorf("Close answered %s %s", id, code)
	}
	h, _ := frame.NewHint("resize", nil)
	if _, err := in.Receive(context.Background(), []byte(announce.String())); !errors.Is(err, frame.ErrClosed) {
		t.Errorf("Receive after Close = %v", err)
	}
	for name, err := range map[string]error{"Load": in.Load(), "Notify": in.Notify(h), "Respond": p.Respond(&frame.NetResponse{OK: true, Status: 200})} {
		if !errors.Is(err, frame.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	in.Close()
	if fs := w.take(t); len(fs) != 0 {
		t.Errorf("sent %+v after Close", fs)
	}
}

func TestSetTheme(t *testing.T) {
	in, w := mustLoaded(t)
	if err := in.SetTheme(frame.ThemeLight); err != nil {
		t.Fatal(err)
	}
	if fs := w.take(t); len(fs) != 0 {
		t.Errorf("an unchanged theme sent %+v", fs)
	}
	if err := in.SetTheme(frame.ThemeDark); err != nil {
		t.Fatal(err)
	}
	fs := w.take(t)
	if e, ok := fs[0].(*frame.HostEvent); len(fs) != 1 || !ok || e.Event != "theme-change" || string(e.Data) != `{"theme":"dark"}` {
		t.Errorf("theme change sent %+v", fs)
	}
	in.Load()
	if r := w.take(t)[0].(*frame.HostReady); r.Theme != frame.ThemeDark {
		t.Errorf("host-ready after the change has theme %q", r.Theme)
	}
	if err := in.SetTheme("sepia"); err == nil {
		t.Error("SetTheme accepted sepia")
	}
}

// TestTerminalAnswersUnderConcurrency races answers, cancels, re-announces
// and reloads: every requestId accepted or refused gets exactly one
// terminal answer, and nothing for it after that (R3).
func TestTerminalAnswersUnderConcurrency(t *testing.T) {
	in, w := mustLoaded(t)
	var (
		mu      sync.Mutex
		counted = map[string]bool{} // requestIds that must get one terminal answer
		wg      sync.WaitGroup
	)
	texts := []func(id, instance string) string{msgText, dbText, netText, openText}
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 300 {
				id := fmt.Sprintf("g%d-%d", g, i)
				got, err := in.Receive(context.Background(), []byte(texts[rng.IntN(4)](id, in.ID())))
				mu.Lock()
				if err == nil || errors.Is(err, frame.ErrBusy) {
					counted[id] = true
				}
				mu.Unlock()
				if got.Request == nil {
					continue
				}
				p := got.Request
				switch rng.IntN(5) {
				case 0:
					p.Stream("x")
					p.Fail(frame.ResponseError{Code: frame.CodeHostError, Message: "x"})
				case 1:
					in.Receive(context.Background(), []byte(appCancel.set("requestId", jstr(id)).set("instanceId", jstr(in.ID())).String()))
				case 2:
					in.Receive(context.Background(), []byte(announce.String()))
				case 3:
					in.Load()
				}
				p.Close()
			}
		})
	}
	wg.Wait()
	terminals := map[string]int{}
	for _, f := range w.take(t) {
		switch f := f.(type) {
		case *frame.AppResponse:
			if f.OK && f.Streaming {
				if terminals[f.RequestID] > 0 {
					t.Errorf("a streaming frame for %s after its terminal answer", f.RequestID)
				}
				continue
			}
			terminals[f.RequestID]++
		case *frame.DBResponse:
			terminals[f.RequestID]++
		case *frame.NetResponse:
			terminals[f.RequestID]++
		case *frame.OpenURLResult:
			terminals[f.RequestID]++
		}
	}
	for id := range counted {
		if terminals[id] != 1 {
			t.Errorf("requestId %s got %d terminal answers, want 1", id, terminals[id])
		}
	}
	for id, n := range terminals {
		if !counted[id] {
			t.Errorf("requestId %s, dropped or never sent, got %d answers", id, n)
		}
	}
	if len(counted) < 100 {
		t.Errorf("only %d requests were accepted or refused: the race tested little", len(counted))
	}
}
