package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/frames"
	"github.com/dsh-browser/broker/wire"
)

func envelopesEqual(a, b *wire.Envelope) bool {
	return a.Type == b.Type && a.ID == b.ID && a.Method == b.Method && bytes.Equal(a.Params, b.Params) &&
		a.OK == b.OK && bytes.Equal(a.Value, b.Value) && a.Code == b.Code && a.Event == b.Event
}

// hellosEqual compares decoded hellos; an absent list equals an empty one.
func hellosEqual(a, b *wire.Hello) bool {
	return a.Bootstrap == b.Bootstrap && slices.Equal(a.Versions, b.Versions) && a.Role == b.Role &&
		a.Token == b.Token && a.JournalKey == b.JournalKey &&
		slices.Equal(a.RequiredCapabilities, b.RequiredCapabilities) &&
		slices.Equal(a.Capabilities, b.Capabilities) &&
		(a.Instance == nil) == (b.Instance == nil) && (a.Instance == nil || *a.Instance == *b.Instance)
}

func welcomesEqual(a, b *wire.Welcome) bool {
	return a.Version == b.Version && a.ConnectionEpoch == b.ConnectionEpoch && slices.Equal(a.Capabilities, b.Capabilities)
}

func TestEncodeShapes(t *testing.T) {
	tests := []struct {
		name string
		env  *wire.Envelope
		want string
	}{
		{"request", wire.Request("r1", "browser.instances", json.RawMessage(`{}`)), specRequest.String()},
		{"request with nil params", wire.Request("r1", "browser.instances", nil), specRequest.String()},
		{"success", wire.Success("r1", json.RawMessage(`[]`)), specSuccess.String()},
		{"void success", wire.Success("r1", nil), `{"type":"response","id":"r1","ok":true,"value":null}`},
		{"failure", wire.Failure("r2", wire.CodeStaleTarget), specFailure.String()},
		{"event", wire.Event("page.changed", json.RawMessage(`{"tab":"instance:7","leaseId":"lease","sequence":1}`)), specEvent.String()},
		{"void event", wire.Event("lease.revoked", nil), `{"type":"event","event":"lease.revoked","value":null}`},
		{"cancel", wire.Cancel("r2"), specCancel.String()},
		{"multibyte id", wire.Cancel(strings.Repeat("😀", 128)), `{"type":"cancel","id":"` + strings.Repeat("😀", 128) + `"}`},
		{"nested params", wire.Request("r1", "a:b", json.RawMessage(`{"a":[1,{"b":null}]}`)), `{"type":"request","id":"r1","method":"a:b","params":{"a":[1,{"b":null}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := wire.Encode(tc.env)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(data) != tc.want {
				t.Errorf("Encode = %s\nwant     %s", data, tc.want)
			}
			got, err := wire.ParseEnvelope(data)
			if err != nil {
				t.Fatalf("ParseEnvelope(Encode(e)): %v", err)
			}
			if !envelopesEqual(got, tc.env) {
				t.Errorf("ParseEnvelope(Encode(e)) = %+v, want %+v", got, tc.env)
			}
			viaJSON, err := json.Marshal(tc.env)
			if err != nil || !bytes.Equal(viaJSON, data) {
				t.Errorf("json.Marshal = %s, %v; want the Encode bytes", viaJSON, err)
			}
		})
	}
}

// TestInvalidRawNeverSent: raw params or values that are not JSON pass
// Encode (it checks typed fields only) but never reach a peer: the framing
// layer, through which every envelope leaves, refuses them.
func TestInvalidRawNeverSent(t *testing.T) {
	for name, env := range map[string]*wire.Envelope{
		"params that are not JSON":     wire.Request("r1", "m", json.RawMessage(`{`)),
		"params followed by more":      wire.Request("r1", "m", json.RawMessage(`{}{}`)),
		"value that is not JSON":       wire.Success("r1", json.RawMessage(`{"a":`)),
		"value of two values":          wire.Success("r1", json.RawMessage(`1 2`)),
		"event value that is not JSON": wire.Event("x", json.RawMessage(`nul`)),
	} {
		data, err := wire.Encode(env)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := frames.Append(nil, data); !errors.Is(err, frames.ErrInvalidJSON) {
			t.Errorf("%s: frames.Append err %v, want ErrInvalidJSON", name, err)
		}
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	tests := []struct {
		name string
		env  *wire.Envelope
	}{
		{"empty id", wire.Cancel("")},
		{"id of 129 code points", wire.Cancel(strings.Repeat("é", 129))},
		{"method with a space", wire.Request("r1", "browser instances", nil)},
		{"method starting with a digit", wire.Request("r1", "1browser", nil)},
		{"method of 129 characters", wire.Request("r1", nameOf(129), nil)},
		{"empty method", wire.Request("r1", "", nil)},
		{"array params", wire.Request("r1", "m", json.RawMessage(`[]`))},
		{"null params", wire.Request("r1", "m", json.RawMessage(`null`))},
		{"request built without params", &wire.Envelope{Type: wire.TypeRequest, ID: "r1", Method: "m"}},
		{"unknown code", wire.Failure("r1", "NOT_A_CODE")},
		{"empty code", wire.Failure("r1", "")},
		{"event with a bad name", wire.Event("_x", nil)},
		{"unknown type", &wire.Envelope{Type: "hello", ID: "r1"}},
		{"zero envelope", &wire.Envelope{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := wire.Encode(tc.env)
			if err == nil {
				t.Fatalf("Encode accepted %+v as %s", tc.env, data)
			}
			if data != nil {
				t.Errorf("Encode returned data with its error")
			}
			var verr *wire.ValidationError
			if !errors.As(err, &verr) {
				t.Errorf("error %v does not wrap a *wire.ValidationError", err)
			}
		})
	}
}

// TestRoundTripGolden re-marshals every valid golden message and parses it
// again.
func TestRoundTripGolden(t *testing.T) {
	for _, g := range allGoldens() {
		if !g.valid {
			continue
		}
		t.Run(g.kind+"/"+g.name, func(t *testing.T) {
			checkRoundTrip(t, g.kind, []byte(g.json))
		})
	}
}

// checkRoundTrip parses data as kind; if it is valid, the re-marshalled
// value must parse again to an equal value.
func checkRoundTrip(t *testing.T, kind string, data []byte) {
	t.Helper()
	switch kind {
	case kindEnvelope:
		e, err := wire.ParseEnvelope(data)
		if err != nil {
			return
		}
		out, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		e2, err := wire.ParseEnvelope(out)
		if err != nil {
			t.Fatalf("re-marshalled envelope is invalid: %v\n%s", err, out)
		}
		if !envelopesEqual(e, e2) {
			t.Fatalf("round trip changed the envelope:\n%+v\n%+v", e, e2)
		}
		enc, err := wire.Encode(e)
		if err != nil || !bytes.Equal(enc, out) {
			t.Fatalf("Encode = %s, %v; want %s", enc, err, out)
		}
	case kindHello:
		h, err := wire.ParseHello(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(h)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		h2, err := wire.ParseHello(out)
		if err != nil {
			t.Fatalf("re-marshalled hello is invalid: %v\n%s", err, out)
		}
		if !hellosEqual(h, h2) {
			t.Fatalf("round trip changed the hello:\n%+v\n%+v", h, h2)
		}
	case kindWelcome:
		w, err := wire.ParseWelcome(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		w2, err := wire.ParseWelcome(out)
		if err != nil {
			t.Fatalf("re-marshalled welcome is invalid: %v\n%s", err, out)
		}
		if !welcomesEqual(w, w2) {
			t.Fatalf("round trip changed the welcome:\n%+v\n%+v", w, w2)
		}
	}
}

// TestMarshalBuiltHandshake checks that payloads built in Go, not parsed,
// marshal to valid JSON.
func TestMarshalBuiltHandshake(t *testing.T) {
	tests := []struct {
		name  string
		kind  string
		value any
	}{
		{"client hello", kindHello, &wire.Hello{Bootstrap: wire.Bootstrap, Versions: []int{wire.Version}, Role: wire.RoleClient,
			Token: "tok", JournalKey: strings.Repeat("ab", 32), RequiredCapabilities: []string{browser.CapRuntime}}},
		{"legacy client hello", kindHello, &wire.Hello{Bootstrap: 1, Versions: []int{1}, Role: wire.RoleClient}},
		{"provider hello", kindHello, &wire.Hello{Bootstrap: 1, Versions: []int{1}, Role: wire.RoleProvider,
			Capabilities: browser.Required(),
			Instance:     &wire.Instance{ID: "i", Family: "chromium", Brand: "b", Version: "v", ProfileLabel: "p"}}},
		{"provider hello without capabilities", kindHello, &wire.Hello{Bootstrap: 1, Versions: []int{1}, Role: wire.RoleProvider,
			Instance: &wire.Instance{ID: "i", Family: "chromium", Brand: "b", Version: "v", ProfileLabel: "p"}}},
		{"provider hello by value", kindHello, wire.Hello{Bootstrap: 1, Versions: []int{1}, Role: wire.RoleProvider, Capabilities: []string{},
			Instance: &wire.Instance{ID: "i", Family: "chromium", Brand: "b", Version: "v", ProfileLabel: "p"}}},
		{"welcome", kindWelcome, &wire.Welcome{Version: 1, ConnectionEpoch: "e", Capabilities: browser.Offered()}},
		{"welcome with no capabilities", kindWelcome, &wire.Welcome{Version: 1, ConnectionEpoch: "e", Capabilities: []string{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if err := parse(tc.kind, data); err != nil {
				t.Errorf("marshalled %s is invalid: %v\n%s", tc.kind, err, data)
			}
		})
	}
}

func TestValidIDAndName(t *testing.T) {
	for _, tc := range []struct {
		s        string
		id, name bool
	}{
		{"", false, false},
		{"a", true, true},
		{strings.Repeat("é", 128), true, false},
		{strings.Repeat("é", 129), false, false},
		{nameOf(128), true, true},
		{nameOf(129), false, false},
		{"A0_.:-z", true, true},
		{"0a", true, false},
		{"a b", true, false},
	} {
		if got := wire.ValidID(tc.s); got != tc.id {
			t.Errorf("ValidID(%.20q) = %v, want %v", tc.s, got, tc.id)
		}
		if got := wire.ValidName(tc.s); got != tc.name {
			t.Errorf("ValidName(%.20q) = %v, want %v", tc.s, got, tc.name)
		}
	}
}

// TestAppendSuccess: a value appended in place gives AppendEncode's bytes
// for Success with that value (null for nothing appended), behind what
// dst held; an invalid ID is refused as AppendEncode refuses it.
func TestAppendSuccess(t *testing.T) {
	for _, tc := range []struct{ id, value string }{
		{"1", `[{"id":"a"}]`}, {"x\u00e9\"<", `"s"`}, {"7", ``}, {"7", `null`}, {strings.Repeat("i", 128), `{}`},
	} {
		got, err := wire.AppendSuccess([]byte("hdr"), tc.id, func(b []byte) []byte { return append(b, tc.value...) })
		want, werr := wire.AppendEncode([]byte("hdr"), wire.Success(tc.id, json.RawMessage(tc.value)))
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Errorf("AppendSuccess(%q, %s) = %s, %v; want %s, %v", tc.id, tc.value, got, err, want, werr)
		}
	}
	for _, id := range []string{"", strings.Repeat("i", 129)} {
		if _, err := wire.AppendSuccess(nil, id, func(b []byte) []byte { return append(b, '1') }); err == nil {
			t.Errorf("AppendSuccess(%q) took an invalid ID", id)
		}
		if _, err := wire.AppendEncode(nil, wire.Success(id, json.RawMessage("1"))); err == nil {
			t.Errorf("AppendEncode(%q) took an invalid ID", id)
		}
	}
}
