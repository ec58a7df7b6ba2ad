package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
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
	obj := make(object, 4)
	err := eachMember(data, func(rawKey, value []byte) error {
		key, err := unquote(rawKey)
		obj[key] = value
		return err
	})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// eachMember calls f with the key, quoted as it is in data, and the value
// of each member of one JSON object, in order, in one validating pass:
// both are subslices of data. It accepts exactly what encoding/json
// accepts, with white space around the object; an error f returns ends
// the pass.
func eachMember(data []byte, f func(rawKey, value []byte) error) error {
	s := scanner{data: data}
	s.space()
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		return errSyntax
	}
	s.i++
	s.space()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			s.space()
			start := s.i
			if err := s.string(); err != nil {
				return err
			}
			rawKey := s.data[start:s.i:s.i]
			s.space()
			if s.peek() != ':' {
				return errSyntax
			}
			s.i++
			s.space()
			vstart := s.i
			if err := s.value(1); err != nil {
				return err
			}
			if err := f(rawKey, s.data[vstart:s.i:s.i]); err != nil {
				return err
			}
			s.space()
			switch s.peek() {
			case ',':
				s.i++
				continue
			case '}':
				s.i++
			default:
				return errSyntax
			}
			break
		}
	}
	s.space()
	if s.i != len(s.data) {
		return errSyntax
	}
	return nil
}

// unquote decodes a JSON string's text. Plain ASCII without escapes (every
// key of the grammar) is sliced; anything else goes through encoding/json,
// which coerces invalid UTF-8 to U+FFFD as a map decode would.
func unquote(raw []byte) (string, error) {
	if inner := raw[1 : len(raw)-1]; plain(inner) {
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

// plain reports whether a JSON string's text is printable ASCII without
// escapes or quotes: its bytes are its value.
func plain(inner []byte) bool {
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
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
		if plainByte[s.data[s.i]] {
			s.i++ // most of a string's bytes: one test each
			continue
		}
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

// DecodeValue decodes one JSON value into the generic form that a JSON
// Schema validator takes, exactly as a json.Decoder with UseNumber does
// (which is what jsonschema.UnmarshalJSON runs): objects as map[string]any
// (a repeated key keeps its last value), arrays as []any, numbers as
// json.Number, strings with invalid UTF-8 and lone surrogates made U+FFFD,
// true, false and nil. It is one validating pass of the scanner above,
// without a decoder or reflection; anything but exactly one value, with
// white space around it, is an error.
func DecodeValue(data []byte) (any, error) {
	s := scanner{data: data}
	s.space()
	v, err := s.decode(0)
	if err != nil {
		return nil, err
	}
	s.space()
	if s.i != len(s.data) {
		return nil, errSyntax
	}
	return v, nil
}

// decode decodes the value at s.i; depth is how many arrays and objects
// enclose it.
func (s *scanner) decode(depth int) (any, error) {
	start := s.i
	switch c := s.peek(); {
	case c == '"':
		if err := s.string(); err != nil {
			return nil, err
		}
		return unquote(s.data[start:s.i])
	case c == '{' || c == '[':
		if depth+1 > maxDepth {
			return nil, errSyntax
		}
		return s.decodeComposite(depth + 1)
	case c == '-' || c >= '0' && c <= '9':
		if err := s.number(); err != nil {
			return nil, err
		}
		return json.Number(s.data[start:s.i]), nil
	case c == 't':
		return true, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == 'n':
		return nil, s.literal("null")
	}
	return nil, errSyntax
}

// decodeComposite decodes the object or array at s.i, the depth-th level
// of nesting.
func (s *scanner) decodeComposite(depth int) (any, error) {
	isObject := s.data[s.i] == '{'
	close := byte(']')
	var obj map[string]any
	var arr []any
	if isObject {
		close = '}'
		obj = make(map[string]any)
	} else {
		arr = []any{}
	}
	s.i++
	s.space()
	if s.peek() == close {
		s.i++
		if isObject {
			return obj, nil
		}
		return arr, nil
	}
	for {
		s.space()
		var key string
		if isObject {
			start := s.i
			if err := s.string(); err != nil {
				return nil, err
			}
			k, err := unquote(s.data[start:s.i])
			if err != nil {
				return nil, err
			}
			key = k
			s.space()
			if s.peek() != ':' {
				return nil, errSyntax
			}
			s.i++
			s.space()
		}
		v, err := s.decode(depth)
		if err != nil {
			return nil, err
		}
		if isObject {
			obj[key] = v
		} else {
			arr = append(arr, v)
		}
		s.space()
		switch s.peek() {
		case ',':
			s.i++
		case close:
			s.i++
			if isObject {
				return obj, nil
			}
			return arr, nil
		default:
			return nil, errSyntax
		}
	}
}

// Elements calls f with each element of one JSON array, in order, each a
// subslice of data (no copy), in one validating pass: no slice of them is
// made. Anything but one array, with white space around it, is an error,
// found before f sees an element past it; so is an error f returns.
func Elements(data []byte, f func(value []byte) error) error {
	s := scanner{data: data}
	if err := s.whole('['); err != nil {
		return err
	}
	s.i++
	s.space()
	if s.peek() == ']' {
		return nil
	}
	for {
		s.space()
		start := s.i
		s.skip() // whole checked it
		if err := f(s.data[start:s.i:s.i]); err != nil {
			return err
		}
		s.space()
		if s.peek() == ']' {
			return nil
		}
		s.i++ // ','
	}
}

// Members calls f with the key and the raw value of each member of one
// JSON object, in order (a key given twice comes twice, so that the last
// one wins for a caller that stores them), in one validating pass: no map
// is made. The key is decoded (a key without escapes is a subslice of
// data, not a copy); the value is a subslice of data. Anything but one
// object, with white space around it, is an error; so is an error f
// returns.
func Members(data []byte, f func(key, value []byte) error) error {
	s := scanner{data: data}
	if err := s.whole('{'); err != nil {
		return err
	}
	return s.members(f)
}

// ObjectElements is [Elements] of an array of objects and [Members] of
// each element in one validating pass (each element is not checked a
// second time): it calls member with each member of an element, as
// Members does, then end with the element's text (a subslice of data).
// An element that is not an object is an error, found before end sees
// it; so is an error member or end returns.
func ObjectElements(data []byte, member func(key, value []byte) error, end func(elem []byte) error) error {
	s := scanner{data: data}
	if err := s.whole('['); err != nil {
		return err
	}
	s.i++
	s.space()
	if s.peek() == ']' {
		return nil
	}
	for {
		s.space()
		start := s.i
		if s.data[s.i] != '{' {
			return errSyntax
		}
		if err := s.members(member); err != nil {
			return err
		}
		if err := end(s.data[start:s.i:s.i]); err != nil {
			return err
		}
		s.space()
		if s.peek() == ']' {
			return nil
		}
		s.i++ // ','
	}
}

// members steps over the object at s.i, which whole has checked, calling
// f with each member's decoded key and raw value, and leaves s after it.
func (s *scanner) members(f func(key, value []byte) error) error {
	s.i++ // '{'
	s.space()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		start := s.i
		s.skipString()
		key := s.data[start+1 : s.i-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			k, err := unquote(s.data[start:s.i])
			if err != nil {
				return err
			}
			key = []byte(k)
		}
		s.space()
		s.i++ // ':'
		s.space()
		vstart := s.i
		s.skip()
		if err := f(key, s.data[vstart:s.i:s.i]); err != nil {
			return err
		}
		s.space()
		if s.peek() == '}' {
			s.i++
			return nil
		}
		s.i++ // ','
	}
}

// skip steps over one value that whole has checked, without checking it
// again: a string to its closing quote, an object or array to its closing
// bracket, a number or literal to the byte that ends it.
func (s *scanner) skip() {
	switch s.data[s.i] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for {
			switch s.data[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					s.i++
					return
				}
			}
			s.i++
		}
	default:
		for s.i < len(s.data) && !strings.ContainsRune(",]} \t\r\n", rune(s.data[s.i])) {
			s.i++
		}
	}
}

// skipString steps over a string that whole has checked.
func (s *scanner) skipString() {
	s.i++
	for {
		for plainByte[s.data[s.i]] {
			s.i++
		}
		switch s.data[s.i] {
		case '"':
			s.i++
			return
		case '\\':
			s.i += 2 // the escaped byte, or the u of \uXXXX (its hex digits are plain)
		default:
			s.i++ // a control character: whole refused it already
		}
	}
}

// plainByte tells the bytes a string's text may hold as they are: all
// but control characters, the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// whole checks that data is one JSON value opening with open, with white
// space around it, and leaves s at its first byte.
func (s *scanner) whole(open byte) error {
	s.space()
	start := s.i
	if s.peek() != open {
		return errSyntax
	}
	if err := s.value(0); err != nil {
		return err
	}
	s.space()
	if s.i != len(s.data) {
		return errSyntax
	}
	s.i = start
	return nil
}

// String decodes one JSON string as encoding/json does (invalid UTF-8 and
// lone surrogates become U+FFFD). Anything else, null included, is an
// error.
func String(raw []byte) (string, error) {
	s := scanner{data: raw}
	if err := s.string(); err != nil || s.i != len(raw) {
		return "", errSyntax
	}
	return unquote(raw)
}

// AppendString appends s to b as a JSON string, escaped as encoding/json
// escapes it.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }
