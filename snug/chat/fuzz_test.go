package chat_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dsh-browser/broker/snug/chat"
)

// FuzzParseReply: ParseReply never panics; a reply it accepts is one JSON
// object taken from the text; a reply that is just an object (trimmed) is
// taken whole; a failure's excerpt is valid UTF-8 within 200 UTF-16 units.
func FuzzParseReply(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{\"a\":1}\n```", `x {"a":"}"} y`, `[{"a":1}]`, `null`, `{"a":`,
		"```\n```", `{{{}}}`, `"\"{}"`, "\xff{}", strings.Repeat("😀", 150)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		obj, err := chat.ParseReply(reply)
		if err != nil {
			re, ok := errors.AsType[*chat.ReplyError](err)
			if !ok {
				t.Fatalf("error %T", err)
			}
			if !utf8.ValidString(re.RawExcerpt) || len(utf16.Encode([]rune(re.RawExcerpt))) > 200 {
				t.Fatalf("excerpt %q", re.RawExcerpt)
			}
			if trimmed := strings.TrimSpace(reply); strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
				t.Fatalf("refused a reply that is one JSON object: %q", reply)
			}
			return
		}
		if !json.Valid(obj) || obj[0] != '{' || !utf8.Valid(obj) {
			t.Fatalf("accepted %q, not one JSON object", obj)
		}
		var m map[string]any
		if json.Unmarshal(obj, &m) != nil {
			t.Fatalf("accepted %q, not an object", obj)
		}
	})
}

// FuzzParseEnvelope: ParseEnvelope never panics, agrees with the published
// schema on the body, and an envelope it accepts round-trips through Text.
func FuzzParseEnvelope(f *testing.F) {
	for _, b := range envelopeGoldens() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		agree(t, body)
		e, err := chat.ParseEnvelope(chat.Tag + "\n" + body)
		if err != nil {
			return
		}
		text, err := e.Text()
		if err != nil {
			t.Fatalf("Text() of an accepted envelope: %v", err)
		}
		back, err := chat.ParseEnvelope(text)
		if err != nil {
			t.Fatalf("the envelope's text does not parse: %v", err)
		}
		if again, _ := back.Text(); again != text {
			t.Fatalf("Text is not stable:\n%s\n%s", text, again)
		}
		if fmt.Sprint(back.AppID, back.InstanceID, back.RequestID, back.Action) != fmt.Sprint(e.AppID, e.InstanceID, e.RequestID, e.Action) {
			t.Fatalf("round trip changed the ids: %+v / %+v", e, back)
		}
	})
}
