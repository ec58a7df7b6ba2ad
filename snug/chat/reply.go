package chat

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/dsh-browser/broker/snug/frame"
)

// ReplyError is an agent reply that holds no JSON object. RawExcerpt is the
// reply's first 200 characters, for the PARSE_FAILED answer.
type ReplyError struct {
	RawExcerpt string
}

func (e *ReplyError) Error() string { return "chat: the agent reply is not a parseable JSON object" }

// fence finds the first fenced block, its info string json or empty.
var fence = regexp.MustCompile("(?i)```(?:json)?\\r?\\n?([\\s\\S]*?)\\r?\\n?```")

// ParseReply reads an agent's reply to an app request. The contract is a
// reply of only a JSON object (a human-readable message member is
// recommended); the host reads it with graduated tolerance, taking the
// first of these that is a JSON object:
//
//  1. the whole reply, trimmed;
//  2. the content of its first fenced ``` block (info string json or none);
//  3. each balanced {…} region of it, in order, strings and escapes
//     respected.
//
// A JSON null, array or scalar is never a reply. It returns the object's
// JSON text, or a *ReplyError.
func ParseReply(text string) (json.RawMessage, error) {
	trimmed := strings.TrimFunc(text, isJSSpace)
	if obj, ok := asObject(trimmed); ok {
		return obj, nil
	}
	if m := fence.FindStringSubmatch(trimmed); m != nil && m[1] != "" {
		if obj, ok := asObject(strings.TrimFunc(m[1], isJSSpace)); ok {
			return obj, nil
		}
	}
	for region := range balancedObjects(trimmed) {
		if obj, ok := asObject(region); ok {
			return obj, nil
		}
	}
	return nil, &ReplyError{RawExcerpt: frame.Clip(text, frame.RawExcerptChars)}
}

// asObject returns s when it is one JSON object, its invalid UTF-8 (which a
// decoder would read as U+FFFD) replaced so.
func asObject(s string) (json.RawMessage, bool) {
	b := bytes.Trim([]byte(s), " \t\r\n")
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return nil, false
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD")), true
}

// balancedObjects yields each top-level balanced {…} region of s, tracking
// JSON strings and escapes so braces inside strings do not count.
func balancedObjects(s string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		depth, start := 0, -1
		inString, escaped := false, false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if inString {
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
				}
				continue
			}
			switch c {
			case '"':
				inString = true
			case '{':
				if depth == 0 {
					start = i
				}
				depth++
			case '}':
				if depth > 0 {
					if depth--; depth == 0 && start >= 0 {
						if !yield(s[start : i+1]) {
							return
						}
						start = -1
					}
				}
			}
		}
	}
}

// isJSSpace is what JavaScript's String.prototype.trim removes: its
// WhiteSpace and LineTerminator characters.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}
