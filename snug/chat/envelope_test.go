package chat_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dsh-browser/broker/internal/jsonmut"
	"github.com/dsh-browser/broker/protocol"
	"github.com/dsh-browser/broker/snug/chat"
	"github.com/dsh-browser/broker/snug/frame"
)

// The envelope of the reference's own test, in the spec's member order.
const specBody = `{"snug":1,"appId":"chess-v1","instanceId":"ins-1","requestId":"req-1","action":"player_move",` +
	`"payload":{"from":"e2","to":"e4"},"state":{"fen":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"},` +
	`"responseSchema":{"move":"string","message":"string"}}`

var specEnvelope = chat.Envelope{AppID: "chess-v1", InstanceID: "ins-1", RequestID: "req-1", Action: "player_move",
	Payload:        json.RawMessage(`{"from":"e2","to":"e4"}`),
	State:          json.RawMessage(`{"fen":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"}`),
	ResponseSchema: json.RawMessage(`{"move":"string","message":"string"}`)}

func TestEnvelopeText(t *testing.T) {
	got, err := specEnvelope.Text()
	if err != nil {
		t.Fatal(err)
	}
	if want := chat.Tag + "\n" + specBody; got != want {
		t.Errorf("Text() =\n%s\nwant\n%s", got, want)
	}
	back, err := chat.ParseEnvelope(got)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(*back) != fmt.Sprint(specEnvelope) {
		t.Errorf("ParseEnvelope(Text()) = %+v", *back)
	}
	minimal := chat.Envelope{AppID: "a", InstanceID: "i", RequestID: "r", Action: "x", Payload: json.RawMessage("null")}
	if got, _ := minimal.Text(); got != chat.Tag+"\n"+`{"snug":1,"appId":"a","instanceId":"i","requestId":"r","action":"x","payload":null}` {
		t.Errorf("minimal envelope: %s", got)
	}
	if _, err := (chat.Envelope{AppID: "a", InstanceID: "i", RequestID: strings.Repeat("r", 129), Action: "x"}).Text(); err == nil {
		t.Error("Text() sent a requestId of 129 characters")
	}
}

func TestEnvelopeFor(t *testing.T) {
	m := &frame.AppMessage{RequestID: "r1", InstanceID: "ins-1", AppID: "notes", Action: "summarize",
		Payload: json.RawMessage(`{"t":1}`), State: json.RawMessage(`[1]`)}
	text, err := chat.EnvelopeFor(m).Text()
	if err != nil {
		t.Fatal(err)
	}
	want := chat.Tag + "\n" + `{"snug":1,"appId":"notes","instanceId":"ins-1","requestId":"r1","action":"summarize","payload":{"t":1},"state":[1]}`
	if text != want {
		t.Errorf("envelope of an app-message:\n%s\nwant\n%s", text, want)
	}
}

// TestEnvelopeDetection: two signals, the tag and snug: 1 (§6).
func TestEnvelopeDetection(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{chat.Tag + "\n" + specBody, true},
		{chat.Tag + "\r\n" + specBody, true},
		{chat.Tag + specBody, true},
		{chat.Tag + "\n \n\t" + specBody + "\n", true},
		{"hello world", false},
		{"what does " + chat.Tag + " mean?", false},
		{" " + chat.Tag + "\n" + specBody, false},
		{"[snug_app_request]\n" + specBody, false},
		{chat.Tag + "\n" + strings.Replace(specBody, `"snug":1,`, "", 1), false},
		{chat.Tag + "\n" + strings.Replace(specBody, `"snug":1`, `"snug":2`, 1), false},
		{chat.Tag + "\n" + strings.Replace(specBody, `"snug":1`, `"snug":"1"`, 1), false},
		{chat.Tag + "\n" + strings.Replace(specBody, `"snug":1`, `"snug":true`, 1), false},
		{chat.Tag + "\n" + specBody[:40], false},
		{chat.Tag + "\n" + specBody + " trailing", false},
		{chat.Tag + "\n" + "\ufeff" + specBody, false},
		{chat.Tag, false},
		{"", false},
	} {
		if got := chat.IsEnvelope(tc.text); got != tc.want {
			t.Errorf("IsEnvelope(%.60q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	for _, body := range []string{"null", "42", "[1,2]", `"str"`} {
		_, err := chat.ParseEnvelope(chat.Tag + "\n" + body)
		if !errors.Is(err, chat.ErrNotEnvelope) {
			t.Errorf("body %s: %v, want ErrNotEnvelope", body, err)
		}
	}
}

// envelopeSchema compiles app-request-envelope.json.
var envelopeSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	data, err := fs.ReadFile(protocol.SnugSchemas, "snug/app-request-envelope.json")
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://snug.invalid/app-request-envelope.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("https://snug.invalid/app-request-envelope.json")
})

// agree checks ParseEnvelope against the published schema on one body.
func agree(t *testing.T, body string) (valid bool) {
	t.Helper()
	s, err := envelopeSchema()
	if err != nil {
		t.Fatal(err)
	}
	_, goErr := chat.ParseEnvelope(chat.Tag + "\n" + body)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		if goErr == nil {
			t.Errorf("ParseEnvelope accepts a body that is not JSON: %q", body)
		}
		return false
	}
	schemaValid := s.Validate(inst) == nil
	if (goErr == nil) != schemaValid {
		t.Errorf("verdicts differ: Go valid=%v (%v), schema valid=%v\n%s", goErr == nil, goErr, schemaValid, body)
	}
	return goErr == nil
}

type member struct{ k, v string }

func bodyOf(ms []member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = jsonmut.Quote(m.k) + ":" + m.v
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// envelopeGoldens are bodies at and past each bound of the envelope.
func envelopeGoldens() []string {
	base := []member{{"snug", "1"}, {"appId", `"a"`}, {"instanceId", `"i"`}, {"requestId", `"r"`}, {"action", `"x"`}}
	with := func(k, v string) string {
		out := append([]member(nil), base...)
		for i := range out {
			if out[i].k == k {
				out[i].v = v
				return bodyOf(out)
			}
		}
		return bodyOf(append(out, member{k, v}))
	}
	without := func(k string) string {
		var out []member
		for _, m := range base {
			if m.k != k {
				out = append(out, m)
			}
		}
		return bodyOf(out)
	}
	out := []string{specBody, bodyOf(base), with("future", `{"x":1}`), with("payload", "null"), with("state", `"s"`)}
	for _, m := range base {
		out = append(out, without(m.k))
		if m.k == "snug" {
			continue
		}
		for _, r := range []string{"x", "é", "中", "😀"} {
			out = append(out, with(m.k, jsonmut.Quote(strings.Repeat(r, 128))), with(m.k, jsonmut.Quote(strings.Repeat(r, 129))))
		}
		for _, v := range []string{`""`, "1", "null", "[]", "{}", "true"} {
			out = append(out, with(m.k, v))
		}
	}
	for _, v := range []string{"1.0", "1e0", "10e-1", "2", "0", `"1"`, "null", "true", "[1]"} {
		out = append(out, with("snug", v))
	}
	return out
}

// TestEnvelopeAgreement holds ParseEnvelope to app-request-envelope.json
// on the golden bodies and on deterministic mutations of them.
func TestEnvelopeAgreement(t *testing.T) {
	bodies := envelopeGoldens()
	for _, b := range bodies {
		agree(t, b)
	}
	m := jsonmut.New(99, jsonmut.Vocabulary{
		Keys:    []string{"snug", "appId", "instanceId", "requestId", "action", "payload", "state", "responseSchema", "v", "type", "extra", ""},
		Enums:   map[string][]any{"snug": {jsonmut.Number("1"), jsonmut.Number("2"), jsonmut.Number("1.0"), "1", true}},
		Strings: []string{strings.Repeat("x", 128), strings.Repeat("x", 129), strings.Repeat("😀", 128), strings.Repeat("😀", 129), "snug:app-message"},
		Numbers: []string{"0", "1", "-1", "1.0", "1e0", "1.5", "2", "100e-2"},
	})
	seen := map[string]bool{}
	valid, total := 0, 0
	for tries := 0; total < 600 && tries < 60000; tries++ {
		tree := m.Mutate(jsonmut.MustParse(bodies[m.Intn(3)]))
		text := jsonmut.Encode(tree)
		if seen[text] {
			continue
		}
		seen[text] = true
		total++
		if agree(t, text) {
			valid++
		}
	}
	t.Logf("%d envelope mutations, %d valid", total, valid)
	if total < 600 || valid < total/10 {
		t.Errorf("%d mutations, %d valid: want 600, at least a tenth valid", total, valid)
	}
}
