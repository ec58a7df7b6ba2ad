package chat_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dsh-browser/broker/snug/chat"
)

// TestParseReply: graduated tolerance, raw ⇒ fenced block ⇒ balanced
// object; never null, an array or a scalar.
func TestParseReply(t *testing.T) {
	for _, tc := range []struct {
		name, reply, want string // want "" for PARSE_FAILED
	}{
		{"an object", `{"message":"hi","move":"e4"}`, `{"message":"hi","move":"e4"}`},
		{"an object with whitespace around", "\n\t  {\"a\":1}  \r\n", `{"a":1}`},
		{"JavaScript whitespace around", "\u00a0\ufeff\u2028{\"a\":1}\u3000", `{"a":1}`},
		{"an empty object", `{}`, `{}`},
		{"a nested object kept as written", `{"a": {"b": [1, 2.50]}}`, `{"a": {"b": [1, 2.50]}}`},
		{"a json fence", "Here you go:\n```json\n{\"a\":1}\n```\nEnjoy!", `{"a":1}`},
		{"a JSON fence in capitals", "```JSON\n{\"a\":1}\n```", `{"a":1}`},
		{"a bare fence", "```\n{\"a\":2}\n```", `{"a":2}`},
		{"a fence without line breaks", "```{\"a\":3}```", `{"a":3}`},
		{"a fence with CRLF", "```json\r\n{\"a\":4}\r\n```", `{"a":4}`},
		{"the first fence", "```json\n{\"a\":1}\n```\n```json\n{\"a\":2}\n```", `{"a":1}`},
		{"a js fence falls to the balanced object", "```js\n{\"a\":5}\n```", `{"a":5}`},
		{"prose around an object", `Sure! {"move":"e4"} Good luck.`, `{"move":"e4"}`},
		{"braces inside strings", `Note: {"text":"a } and a { inside","n":1} done`, `{"text":"a } and a { inside","n":1}`},
		{"escaped quotes inside strings", `x {"q":"say \"}\" now"} y`, `{"q":"say \"}\" now"}`},
		{"the first balanced object that parses", `{not json} then {"ok":true}`, `{"ok":true}`},
		{"an object inside an array", `[{"a":1}]`, `{"a":1}`},
		{"null", `null`, ""},
		{"an array of scalars", `[1,2]`, ""},
		{"a number", `42`, ""},
		// A JSON string; the brace region in its text, {\"a\":1}, is not JSON.
		{"a string", `"{\"a\":1}"`, ""},
		{"true", `true`, ""},
		{"prose only", `I cannot help with that.`, ""},
		{"a truncated object", `{"message":"the reply was cut`, ""},
		{"empty", ``, ""},
		{"a fence with null", "```json\nnull\n```", ""},
		{"an unclosed brace", `{"a":1`, ""},
		{"single quotes", `{'a':1}`, ""},
	} {
		got, err := chat.ParseReply(tc.reply)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: ParseReply = %s, want PARSE_FAILED", tc.name, got)
		case tc.want != "" && (err != nil || string(got) != tc.want):
			t.Errorf("%s: ParseReply = %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

// TestReplyExcerpt: rawExcerpt is the reply's first 200 characters, and at
// most 200 UTF-16 code units, which is how the app counts them.
func TestReplyExcerpt(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		runes       int
	}{
		{"short", "not json", 8},
		{"200 ascii", strings.Repeat("a", 200), 200},
		{"201 ascii", strings.Repeat("a", 201), 200},
		{"200 é", strings.Repeat("é", 200), 200},
		{"201 é", strings.Repeat("é", 201), 200},
		{"100 emoji", strings.Repeat("😀", 100), 100},
		{"101 emoji", strings.Repeat("😀", 101), 100},
		{"199 ascii then an emoji", strings.Repeat("a", 199) + "😀", 199},
		{"leading spaces kept", "   " + strings.Repeat("b", 300), 200},
		{"invalid UTF-8", "\xff\xfe" + strings.Repeat("c", 300), 200},
	} {
		_, err := chat.ParseReply(tc.reply)
		re, ok := errors.AsType[*chat.ReplyError](err)
		if !ok {
			t.Fatalf("%s: %v, want a *ReplyError", tc.name, err)
		}
		units := len(utf16.Encode([]rune(re.RawExcerpt)))
		if !utf8.ValidString(re.RawExcerpt) || utf8.RuneCountInString(re.RawExcerpt) != tc.runes || units > 200 {
			t.Errorf("%s: excerpt of %d characters, %d UTF-16 units, want %d and ≤200", tc.name, utf8.RuneCountInString(re.RawExcerpt), units, tc.runes)
		}
		if tc.name == "leading spaces kept" && !strings.HasPrefix(re.RawExcerpt, "   b") {
			t.Errorf("the excerpt is not the reply's start: %q", re.RawExcerpt[:10])
		}
	}
}
