package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// ValidationError reports why a message does not match the v1 grammar. Field
// is a JSON-pointer-like path ("" for the whole message).
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return "wire: message " + e.Reason
	}
	return "wire: " + e.Field + " " + e.Reason
}

func invalid(field, reason string) error { return &ValidationError{Field: field, Reason: reason} }
func missing(field string) error         { return &ValidationError{Field: field, Reason: "is required"} }

type object map[string]json.RawMessage

// decodeObject decodes data, which must be a JSON object, into its members.
func decodeObject(data []byte, field string) (object, error) {
	data = bytes.Trim(data, " \t\r\n") // JSON whitespace only, not bytes.TrimSpace's Unicode spaces
	if !isObject(data) {
		return nil, invalid(field, "must be a JSON object")
	}
	obj, err := splitObject(data)
	if err != nil {
		return nil, invalid(field, "is not valid JSON")
	}
	return obj, nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func onlyKeys(obj object, field string, allowed ...string) error {
	for k := range obj {
		found := false
		for _, a := range allowed {
			if k == a {
				found = true
				break
			}
		}
		if !found {
			return invalid(join(field, k), "is not allowed")
		}
	}
	return nil
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func rawString(raw json.RawMessage, field string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", invalid(field, "must be a string")
	}
	if len(raw) < 2 || raw[len(raw)-1] != '"' {
		return "", invalid(field, "must be a string")
	}
	s, err := unquote(raw) // raw is a whole JSON string: splitObject checked it
	if err != nil {
		return "", invalid(field, "must be a string")
	}
	return s, nil
}

func stringField(obj object, key string) (string, error) {
	raw, ok := obj[key]
	if !ok {
		return "", missing(key)
	}
	return rawString(raw, key)
}

func boolField(obj object, key string) (bool, error) {
	raw, ok := obj[key]
	if !ok {
		return false, missing(key)
	}
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalid(key, "must be a boolean")
}

func idField(obj object, key string) (string, error) {
	s, err := stringField(obj, key)
	if err != nil {
		return "", err
	}
	if loneSurrogate(obj[key]) {
		// Decoding turns it into U+FFFD, so a reply would carry another ID.
		return "", invalid(key, "must not escape a lone UTF-16 surrogate")
	}
	if !ValidID(s) {
		return "", invalid(key, "must be 1 to 128 characters")
	}
	return s, nil
}

// loneSurrogate reports whether a JSON string's text escapes a UTF-16
// surrogate that is not half of a pair (\uD800 alone, or \uDC00 first).
// Raw UTF-8 cannot hold surrogates (frames rejects invalid UTF-8), so only
// escapes can.
func loneSurrogate(raw json.RawMessage) bool {
	high := false // the previous escape was a high surrogate
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			if high {
				return true
			}
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' || i+4 >= len(raw) {
			if high {
				return true
			}
			continue
		}
		v, err := strconv.ParseUint(string(raw[i+1:i+5]), 16, 16)
		i += 4
		if err != nil {
			continue
		}
		switch {
		case v >= 0xD800 && v <= 0xDBFF:
			if high {
				return true
			}
			high = true
		case v >= 0xDC00 && v <= 0xDFFF:
			if !high {
				return true
			}
			high = false
		default:
			if high {
				return true
			}
		}
	}
	return high
}

func nameField(obj object, key string) (string, error) {
	s, err := stringField(obj, key)
	if err != nil {
		return "", err
	}
	if !ValidName(s) {
		return "", invalid(key, "must match [A-Za-z][A-Za-z0-9_.:-]* and be at most 128 characters")
	}
	return s, nil
}

// boundedString checks a string of min..max Unicode code points.
func boundedString(raw json.RawMessage, field string, min, max int) (string, error) {
	s, err := rawString(raw, field)
	if err != nil {
		return "", err
	}
	if n := utf8.RuneCountInString(s); n < min || n > max {
		return "", invalid(field, "must be "+strconv.Itoa(min)+" to "+strconv.Itoa(max)+" characters")
	}
	return s, nil
}

// integer decodes a JSON number that is mathematically an integer within
// [min, max]. Like JSON Schema, 1.0 and 1e0 count as the integer 1. The test
// is exact on the decimal text, not on a float64 rounding of it: 1.0000000000000001
// is not an integer.
func integer(raw json.RawMessage, field string, min, max int) (int, error) {
	raw = bytes.TrimSpace(raw)
	n, ok := exactInteger(raw)
	if !ok {
		return 0, invalid(field, "must be an integer")
	}
	if n < int64(min) || n > int64(max) {
		return 0, invalid(field, "must be between "+strconv.Itoa(min)+" and "+strconv.Itoa(max))
	}
	return int(n), nil
}

// exactInteger reports whether the JSON number s is an integer and returns
// it, saturated to ±(10^18) when larger. A number whose decimal exponent,
// less its count of fraction digits, exceeds 10^6 in magnitude is not
// treated as an integer: math/big (and so the reference JSON Schema
// validator) refuses such numbers, and they cannot be a valid count anyway.
func exactInteger(s []byte) (int64, bool) {
	const saturated = int64(1e18)
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[:i]
	var frac []byte
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		frac, i = s[i+1:j], j
		if len(frac) == 0 {
			return 0, false
		}
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return 0, false
		}
		for ; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			if exp < 1e12 {
				exp = exp*10 + int64(s[i]-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
	}
	if len(intPart) == 0 || i != len(s) {
		return 0, false
	}
	digits := bytes.TrimLeft(append(append([]byte(nil), intPart...), frac...), "0")
	if len(digits) == 0 {
		return 0, true
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

// array decodes a JSON array of at most max items.
func array(raw json.RawMessage, field string, minItems, maxItems int) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, invalid(field, "must be an array")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid(field, "must be an array")
	}
	if len(items) < minItems || len(items) > maxItems {
		return nil, invalid(field, "must have "+strconv.Itoa(minItems)+" to "+strconv.Itoa(maxItems)+" items")
	}
	return items, nil
}

// nameList decodes a list of at most max unique capability names.
func nameList(raw json.RawMessage, field string, max int) ([]string, error) {
	items, err := array(raw, field, 0, max)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(items))
	seen := make(map[string]bool, len(items))
	for i, item := range items {
		f := field + "[" + strconv.Itoa(i) + "]"
		s, err := rawString(item, f)
		if err != nil {
			return nil, err
		}
		if !ValidName(s) {
			return nil, invalid(f, "is not a valid capability name")
		}
		if seen[s] {
			return nil, invalid(field, "must not repeat a name")
		}
		seen[s] = true
		names = append(names, s)
	}
	return names, nil
}
