package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// errSyntax is what the scanner reports for text that is not JSON; callers
// turn it into a *ValidationError.
var errSyntax = errors.New("not valid JSON")

// maxDepth is encoding/json's nesting limit, kept so that both decoders
// refuse the same texts.
const maxDepth = 10000

// splitObject splits one JSON object into its members in one validating
// pass, without decoding the values: each is a subslice of data (no copy).
// It accepts exactly what encoding/json accepts; a key given twice keeps
// its last value, as decoding into a map does.
func splitObject(data []byte) (object, error) {
	s := scanner{data: data}
	s.space()
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		return nil, errSyntax
	}
	s.i++
	obj := make(object, 4)
	s.space()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			s.space()
			start := s.i
			if err := s.string(); err != nil {
				return nil, err
			}
			key, err := unquote(s.data[start:s.i])
			if err != nil {
				return nil, err
			}
			s.space()
			if s.peek() != ':' {
				return nil, errSyntax
			}
			s.i++
			s.space()
			vstart := s.i
			if err := s.value(1); err != nil {
				return nil, err
			}
			obj[key] = s.data[vstart:s.i:s.i]
			s.space()
			switch s.peek() {
			case ',':
				s.i++
				continue
			case '}':
				s.i++
			default:
				return nil, errSyntax
			}
			break
		}
	}
	s.space()
	if s.i != len(s.data) {
		return nil, errSyntax
	}
	return obj, nil
}

// unquote decodes a JSON string's text. Plain ASCII without escapes (every
// key of the grammar) is sliced; anything else goes through encoding/json,
// which coerces invalid UTF-8 to U+FFFD as a map decode would.
func unquote(raw []byte) (string, error) {
	inner := raw[1 : len(raw)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		if k, ok := keys[string(inner)]; ok {
			return k, nil // the grammar's own keys: no allocation
		}
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errSyntax
	}
	return s, nil
}

// keys are the member names of the envelope and hello grammar, interned.
var keys = func() map[string]string {
	m := make(map[string]string)
	for _, k := range []string{"type", "id", "method", "params", "ok", "value", "code", "event",
		"request", "response", "cancel", "bootstrap", "versions", "role", "token", "journalKey",
		"requiredCapabilities", "capabilities", "kind", "instance", "family", "brand", "version",
		"profileLabel", "connectionEpoch"} {
		m[k] = k
	}
	return m
}()

type scanner struct {
	data []byte
	i    int
}

func (s *scanner) peek() byte {
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value skips one value starting at s.i.
func (s *scanner) value(depth int) error {
	if depth > maxDepth {
		return errSyntax
	}
	switch c := s.peek(); {
	case c == '"':
		return s.string()
	case c == '{' || c == '[':
		return s.composite(depth)
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return errSyntax
}

func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.data[s.i:], []byte(word)) {
		return errSyntax
	}
	s.i += len(word)
	return nil
}

// composite skips an object or array.
func (s *scanner) composite(depth int) error {
	open := s.data[s.i]
	close := byte(']')
	if open == '{' {
		close = '}'
	}
	s.i++
	s.space()
	if s.peek() == close {
		s.i++
		return nil
	}
	for {
		s.space()
		if open == '{' {
			if err := s.string(); err != nil {
				return err
			}
			s.space()
			if s.peek() != ':' {
				return errSyntax
			}
			s.i++
			s.space()
		}
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case close:
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// string skips a string: its escapes checked, control characters refused.
func (s *scanner) string() error {
	if s.peek() != '"' {
		return errSyntax
	}
	s.i++
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			return nil
		case c == '\\':
			if s.i+1 >= len(s.data) {
				return errSyntax
			}
			switch s.data[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.data) || !isHex4(s.data[s.i+2:s.i+6]) {
					return errSyntax
				}
				s.i += 6
			default:
				return errSyntax
			}
		case c < 0x20:
			return errSyntax
		default:
			s.i++
		}
	}
	return errSyntax
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// number skips a number of JSON's grammar.
func (s *scanner) number() error {
	digits := func() int {
		n := 0
		for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.peek() == '-' {
		s.i++
	}
	switch {
	case s.peek() == '0':
		s.i++
	case s.peek() >= '1' && s.peek() <= '9':
		digits()
	default:
		return errSyntax
	}
	if s.peek() == '.' {
		s.i++
		if digits() == 0 {
			return errSyntax
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if digits() == 0 {
			return errSyntax
		}
	}
	return nil
}
