// Package jsonread reads the members of decoded JSON objects against the
// rules of a JSON Schema, the way the published Snug schemas state them:
// string bounds count Unicode code points, integers are judged on their
// exact decimal value, a repeated key keeps its last value. Packages
// snug/frame and snug/chat build their parsers on it.
package jsonread

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Members are the members of one decoded JSON object. A repeated key keeps
// its last value, as JSON.parse and the schema validator do.
type Members map[string]json.RawMessage

// MaxSafeInteger is the schemas' maximum for integers (2^53 − 1).
const MaxSafeInteger = 1<<53 - 1

// TrimSpace trims JSON whitespace, and only that.
func TrimSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// Kind is the JSON type of a raw value, told by its first byte: one of
// { [ " t f n, '0' for a number, 0 for nothing.
func Kind(raw json.RawMessage) byte {
	raw = TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; c {
	case '{', '[', '"', 't', 'f', 'n':
		return c
	}
	return '0'
}

// String decodes a JSON string.
func String(raw json.RawMessage) (string, bool) {
	if Kind(raw) != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Object decodes a JSON object.
func Object(raw json.RawMessage) (Members, bool) {
	if Kind(raw) != '{' {
		return nil, false
	}
	var obj Members
	if json.Unmarshal(raw, &obj) != nil {
		return nil, false
	}
	return obj, true
}

// Array decodes a JSON array (empty, not nil, when it has no items).
func Array(raw json.RawMessage) ([]json.RawMessage, bool) {
	if Kind(raw) != '[' {
		return nil, false
	}
	items := []json.RawMessage{}
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	return items, true
}

// Chars counts s as the schemas' maxLength does: in Unicode code points.
func Chars(s string) int { return utf8.RuneCountInString(s) }

// Integer decodes a JSON number that is an integer, judged on its exact
// decimal value as JSON Schema judges it (1.0 and 1e0 are 1;
// 1.0000000000000001 is not an integer), saturated to ±10^18. Like
// math/big, under the schema validator, it refuses a nonzero number whose
// exponent less its fraction digits exceeds 10^6 in magnitude: that is not
// a number the schema can compare.
func Integer(raw json.RawMessage) (int64, bool) {
	if Kind(raw) != '0' {
		return 0, false
	}
	return integer(TrimSpace(raw))
}

func integer(s []byte) (int64, bool) {
	const saturated = int64(1e18)
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[:i]
	var frac []byte
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		frac, i = s[i+1:j], j
		if len(frac) == 0 {
			return 0, false
		}
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		e, err := strconv.ParseInt(string(s[i+1:]), 10, 64)
		if err != nil {
			return 0, false
		}
		exp, i = e, len(s)
	}
	if len(intPart) == 0 || i != len(s) {
		return 0, false
	}
	digits := bytes.TrimLeft(append(append([]byte(nil), intPart...), frac...), "0")
	if len(digits) == 0 {
		return 0, true // zero, whatever its exponent, as math/big has it
	}
	if exp < -1<<62 {
		return 0, false
	}
	exp -= int64(len(frac))
	if exp > 1e6 || exp < -1e6 {
		return 0, false
	}
	trimmed := bytes.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	digits = trimmed
	if exp < 0 {
		return 0, false // a nonzero fraction remains
	}
	if int64(len(digits))+exp > 18 {
		if neg {
			return -saturated, true
		}
		return saturated, true
	}
	var n int64
	for _, d := range digits {
		n = n*10 + int64(d-'0')
	}
	for ; exp > 0; exp-- {
		n *= 10
	}
	if neg {
		n = -n
	}
	return n, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Problem is the first rule a Reader found broken.
type Problem struct {
	Field  string // dotted path of the member; "" for the object itself
	Reason string
}

// Reader reads the members of one object, keeping the first Problem found.
// Once Err is set every read is a no-op returning a zero value.
type Reader struct {
	obj  Members
	path string
	Err  *Problem
}

// NewReader reads obj, whose members are named under path ("" at the top).
func NewReader(obj Members, path string) *Reader { return &Reader{obj: obj, path: path} }

// Fail records a problem with member key, unless one was found already.
func (r *Reader) Fail(key, reason string) {
	if r.Err == nil {
		name := key
		if r.path != "" {
			name = r.path + "." + key
		}
		r.Err = &Problem{Field: name, Reason: reason}
	}
}

// Raw returns a member's raw value.
func (r *Reader) Raw(key string) (json.RawMessage, bool) {
	if r.Err != nil {
		return nil, false
	}
	v, ok := r.obj[key]
	return v, ok
}

func (r *Reader) lookup(key string, required bool) (json.RawMessage, bool) {
	v, ok := r.Raw(key)
	if !ok && required && r.Err == nil {
		r.Fail(key, "is required")
	}
	return v, ok
}

// Str reads a string member of min–max characters (max < 0: no maximum).
func (r *Reader) Str(key string, required bool, min, max int) string {
	v, ok := r.lookup(key, required)
	if !ok {
		return ""
	}
	s, ok := String(v)
	if !ok {
		r.Fail(key, "must be a string")
		return ""
	}
	if n := Chars(s); n < min || (max >= 0 && n > max) {
		if max < 0 {
			r.Fail(key, "must be at least "+strconv.Itoa(min)+" characters")
		} else {
			r.Fail(key, "must be "+strconv.Itoa(min)+" to "+strconv.Itoa(max)+" characters")
		}
		return ""
	}
	return s
}

// Enum reads a required string member that must be one of values.
func (r *Reader) Enum(key string, values ...string) string {
	s := r.Str(key, true, 0, -1)
	if r.Err == nil && !slices.Contains(values, s) {
		r.Fail(key, "must be one of "+join(values))
	}
	return s
}

func join(values []string) string {
	var b bytes.Buffer
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v)
	}
	return b.String()
}

// Bool reads a boolean member.
func (r *Reader) Bool(key string, required bool) bool {
	v, ok := r.lookup(key, required)
	if !ok {
		return false
	}
	switch string(TrimSpace(v)) {
	case "true":
		return true
	case "false":
		return false
	}
	r.Fail(key, "must be a boolean")
	return false
}

// ConstBool checks that a required member is the boolean want.
func (r *Reader) ConstBool(key string, want bool) {
	if r.Bool(key, true) != want && r.Err == nil {
		r.Fail(key, "must be "+strconv.FormatBool(want))
	}
}

// Int reads an integer member in [min, max]; present is false when it is
// absent.
func (r *Reader) Int(key string, required bool, min, max int64) (n int64, present bool) {
	v, ok := r.lookup(key, required)
	if !ok {
		return 0, false
	}
	n, isInt := Integer(v)
	if !isInt {
		r.Fail(key, "must be an integer")
		return 0, false
	}
	if n < min || n > max {
		r.Fail(key, "must be between "+strconv.FormatInt(min, 10)+" and "+strconv.FormatInt(max, 10))
		return 0, false
	}
	return n, true
}

// Object reads an object member (nil when absent).
func (r *Reader) Object(key string, required bool) Members {
	v, ok := r.lookup(key, required)
	if !ok {
		return nil
	}
	obj, ok := Object(v)
	if !ok {
		r.Fail(key, "must be an object")
	}
	return obj
}

// Array reads an array member (nil when absent).
func (r *Reader) Array(key string, required bool) []json.RawMessage {
	v, ok := r.lookup(key, required)
	if !ok {
		return nil
	}
	items, ok := Array(v)
	if !ok {
		r.Fail(key, "must be an array")
	}
	return items
}

// Value reads a member of any JSON type, trimmed (nil when absent).
func (r *Reader) Value(key string, required bool) json.RawMessage {
	v, _ := r.lookup(key, required)
	return TrimSpace(v)
}

// Strings reads an optional array of strings (nil when absent).
func (r *Reader) Strings(key string) []string {
	items := r.Array(key, false)
	if items == nil {
		return nil
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		s, ok := String(item)
		if !ok {
			r.Fail(key+"["+strconv.Itoa(i)+"]", "must be a string")
			return nil
		}
		out = append(out, s)
	}
	return out
}

// Sub returns a Reader of a nested object, member key of this one.
func (r *Reader) Sub(key string, obj Members) *Reader {
	path := key
	if r.path != "" {
		path = r.path + "." + key
	}
	return &Reader{obj: obj, path: path}
}

// Adopt keeps the first problem a nested Reader found.
func (r *Reader) Adopt(sub *Reader) {
	if r.Err == nil && sub.Err != nil {
		r.Err = sub.Err
	}
}

// Only rejects any member not named in keys (additionalProperties: false).
// The first unknown key in sort order is the one reported.
func (r *Reader) Only(keys ...string) {
	if r.Err != nil {
		return
	}
	var unknown []string
	for k := range r.obj {
		if !slices.Contains(keys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		r.Fail(slices.Min(unknown), "is not allowed (a strict frame rejects unknown keys)")
	}
}

// Names returns the member names in sort order.
func (r *Reader) Names() []string {
	names := make([]string, 0, len(r.obj))
	for k := range r.obj {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
