// Package wire defines the v1 protocol's messages: the five envelope shapes,
// the hello and welcome payloads, capability names and the error-code
// registry, with a strict validator and the generator of the published JSON
// Schema (protocol/v1.schema.json).
//
// # Envelopes
//
//	{"type":"request","id":"r1","method":"browser.instances","params":{}}
//	{"type":"response","id":"r1","ok":true,"value":[]}
//	{"type":"response","id":"r2","ok":false,"code":"STALE_TARGET"}
//	{"type":"event","event":"page.changed","value":{…}}
//	{"type":"cancel","id":"r2"}
//
// Every field shown is required and no other field is allowed. IDs are 1–128
// Unicode code points; method and event names match [A-Za-z][A-Za-z0-9_.:-]*
// and are at most 128 characters; params is an object; value is any JSON
// value, with a void result sent as an explicit null; error responses carry
// only a registry [Code].
//
// Envelope validation does not validate method payloads, authenticate
// senders or authorize anything: that is the broker's job.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Envelope types.
const (
	TypeRequest  = "request"
	TypeResponse = "response"
	TypeEvent    = "event"
	TypeCancel   = "cancel"
)

// Limits of the envelope grammar.
const (
	MaxIDLength   = 128 // Unicode code points
	MaxNameLength = 128 // ASCII characters
)

// Envelope is one decoded message. Which fields are meaningful depends on
// Type: request (ID, Method, Params), response (ID, OK, then Value or Code),
// event (Event, Value), cancel (ID).
type Envelope struct {
	Type   string
	ID     string
	Method string
	Params json.RawMessage // a JSON object
	OK     bool
	Value  json.RawMessage // any JSON value; "null" for void
	Code   Code
	Event  string
}

// Request returns a request envelope.
func Request(id, method string, params json.RawMessage) *Envelope {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	return &Envelope{Type: TypeRequest, ID: id, Method: method, Params: params}
}

// Success returns a success response; a nil value becomes an explicit null.
func Success(id string, value json.RawMessage) *Envelope {
	return &Envelope{Type: TypeResponse, ID: id, OK: true, Value: nullIfEmpty(value)}
}

// Failure returns an error response carrying only code.
func Failure(id string, code Code) *Envelope {
	return &Envelope{Type: TypeResponse, ID: id, Code: code}
}

// Event returns an event envelope.
func Event(name string, value json.RawMessage) *Envelope {
	return &Envelope{Type: TypeEvent, Event: name, Value: nullIfEmpty(value)}
}

// Cancel returns a cancel envelope for the request with the given ID.
func Cancel(id string) *Envelope {
	return &Envelope{Type: TypeCancel, ID: id}
}

func nullIfEmpty(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// MarshalJSON encodes the envelope in its exact wire shape. It does not
// validate; use [Encode] for that.
func (e Envelope) MarshalJSON() ([]byte, error) {
	return e.appendJSON(make([]byte, 0, e.sizeHint())), nil
}

// sizeHint is about the length of the envelope's encoding.
func (e *Envelope) sizeHint() int {
	return 64 + len(e.ID) + len(e.Method) + len(e.Params) + len(e.Value) + len(e.Event)
}

// appendJSON appends the envelope's wire shape to b.
func (e *Envelope) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, e.Type)
	switch e.Type {
	case TypeRequest:
		b = append(b, `,"id":`...)
		b = appendString(b, e.ID)
		b = append(b, `,"method":`...)
		b = appendString(b, e.Method)
		b = append(b, `,"params":`...)
		b = append(b, e.Params...)
	case TypeResponse:
		b = append(b, `,"id":`...)
		b = appendString(b, e.ID)
		if e.OK {
			b = append(b, `,"ok":true,"value":`...)
			b = append(b, nullIfEmpty(e.Value)...)
		} else {
			b = append(b, `,"ok":false,"code":`...)
			b = appendString(b, string(e.Code))
		}
	case TypeEvent:
		b = append(b, `,"event":`...)
		b = appendString(b, e.Event)
		b = append(b, `,"value":`...)
		b = append(b, nullIfEmpty(e.Value)...)
	case TypeCancel:
		b = append(b, `,"id":`...)
		b = appendString(b, e.ID)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string. Plain printable ASCII without
// quotes or backslashes (every type, method, code and most IDs) is written
// as is; anything else is escaped by encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Encode validates e's typed fields and returns its JSON encoding. The raw
// params and value are not scanned here: every envelope leaves through
// frames.Append, frames.Write or frames.Seal, which refuse a payload that
// is not valid JSON or UTF-8 as it leaves, so scanning here too would only
// read the bytes twice.
func Encode(e *Envelope) ([]byte, error) {
	return AppendEncode(nil, e)
}

// AppendEncode is [Encode] appending to dst, so that a sender can encode an
// envelope behind the frame header it reserved (frames.Seal) and send it
// without another copy.
func AppendEncode(dst []byte, e *Envelope) ([]byte, error) {
	if err := e.check(); err != nil {
		return dst, fmt.Errorf("wire: refusing to send an invalid envelope: %w", err)
	}
	return e.appendJSON(slices.Grow(dst, e.sizeHint())), nil
}

// AppendSuccess is [AppendEncode] of Success(id, v), where appendValue
// appends v's JSON to the envelope as it is written: a value that writes
// itself goes into the frame without being copied there from a buffer of
// its own. appendValue appends one JSON value, or nothing for null.
func AppendSuccess(dst []byte, id string, appendValue func([]byte) []byte) ([]byte, error) {
	if !ValidID(id) {
		return dst, fmt.Errorf("wire: refusing to send an invalid envelope: %w", invalid("id", "must be 1 to 128 characters"))
	}
	dst = append(dst, `{"type":"response","id":`...)
	dst = appendString(dst, id)
	dst = append(dst, `,"ok":true,"value":`...)
	n := len(dst)
	if dst = appendValue(dst); len(dst) == n {
		dst = append(dst, "null"...)
	}
	return append(dst, '}'), nil
}

// check validates the typed fields of an envelope built in Go.
func (e *Envelope) check() error {
	switch e.Type {
	case TypeRequest:
		if !ValidName(e.Method) {
			return invalid("method", "must match [A-Za-z][A-Za-z0-9_.:-]* and be at most 128 characters")
		}
		if !isObject(e.Params) {
			return invalid("params", "must be an object")
		}
	case TypeResponse:
		if !e.OK && !e.Code.Known() {
			return invalid("code", "is not a registry error code")
		}
	case TypeEvent:
		if !ValidName(e.Event) {
			return invalid("event", "must match [A-Za-z][A-Za-z0-9_.:-]* and be at most 128 characters")
		}
		return nil
	case TypeCancel:
	default:
		return invalid("type", "must be request, response, event or cancel")
	}
	if !ValidID(e.ID) {
		return invalid("id", "must be 1 to 128 characters")
	}
	return nil
}

// ParseEnvelope decodes and validates one envelope. The error is a
// *ValidationError naming the offending field.
func ParseEnvelope(data []byte) (*Envelope, error) {
	var m envelopeMembers
	data = bytes.Trim(data, " \t\r\n") // JSON whitespace only, not bytes.TrimSpace's Unicode spaces
	if !isObject(data) {
		return nil, invalid("", "must be a JSON object")
	}
	if err := eachMember(data, m.set); err != nil {
		return nil, invalid("", "is not valid JSON")
	}
	raw := m.raw[memberType]
	if raw == nil {
		return nil, missing("type")
	}
	typ, err := envelopeType(raw)
	if err != nil {
		return nil, err
	}
	e := &Envelope{Type: typ}
	switch typ {
	case TypeRequest:
		if err := m.only(memberType, memberID, memberMethod, memberParams); err != nil {
			return nil, err
		}
		if e.ID, err = m.id(); err != nil {
			return nil, err
		}
		if e.Method, err = m.name(memberMethod); err != nil {
			return nil, err
		}
		raw := m.raw[memberParams]
		if raw == nil {
			return nil, missing("params")
		}
		if !isObject(raw) {
			return nil, invalid("params", "must be an object")
		}
		e.Params = raw
	case TypeResponse:
		ok, err := m.bool(memberOK)
		if err != nil {
			return nil, err
		}
		e.OK = ok
		if ok {
			err = m.only(memberType, memberID, memberOK, memberValue)
		} else {
			err = m.only(memberType, memberID, memberOK, memberCode)
		}
		if err != nil {
			return nil, err
		}
		if e.ID, err = m.id(); err != nil {
			return nil, err
		}
		if ok {
			if e.Value = m.raw[memberValue]; e.Value == nil {
				return nil, missing("value")
			}
		} else {
			c, err := m.string(memberCode)
			if err != nil {
				return nil, err
			}
			if !Code(c).Known() {
				return nil, invalid("code", "is not a registry error code")
			}
			e.Code = Code(c)
		}
	case TypeEvent:
		if err := m.only(memberType, memberEvent, memberValue); err != nil {
			return nil, err
		}
		if e.Event, err = m.name(memberEvent); err != nil {
			return nil, err
		}
		if e.Value = m.raw[memberValue]; e.Value == nil {
			return nil, missing("value")
		}
	case TypeCancel:
		if err := m.only(memberType, memberID); err != nil {
			return nil, err
		}
		if e.ID, err = m.id(); err != nil {
			return nil, err
		}
	default:
		return nil, invalid("type", "must be request, response, event or cancel")
	}
	return e, nil
}

// The members of the envelope grammar, in the order of memberNames.
const (
	memberType = iota
	memberID
	memberMethod
	memberParams
	memberOK
	memberValue
	memberCode
	memberEvent
	memberCount
)

var memberNames = [memberCount]string{"type", "id", "method", "params", "ok", "value", "code", "event"}

// envelopeMembers holds an envelope's members as ParseEnvelope reads them:
// each member of the grammar's raw value (nil when absent; a key given
// twice keeps its last value, as decoding into a map does), and the first
// other key. It lives on the parser's stack: no map, no key strings.
type envelopeMembers struct {
	raw      [memberCount][]byte
	other    []byte // the first key not of the grammar, quoted as in the text
	hasOther bool
}

// set records one member; rawKey is the key as it is in the text, quoted.
func (m *envelopeMembers) set(rawKey, value []byte) error {
	i := memberIndex(rawKey[1 : len(rawKey)-1])
	if i < 0 && bytes.IndexByte(rawKey, '\\') >= 0 {
		// An escaped key names a member by its decoded text.
		key, err := unquote(rawKey)
		if err != nil {
			return err
		}
		i = memberIndex([]byte(key))
	}
	if i < 0 {
		if !m.hasOther {
			m.other, m.hasOther = rawKey, true
		}
		return nil
	}
	m.raw[i] = value
	return nil
}

// memberIndex returns the index of a member of the grammar named key, or -1.
func memberIndex(key []byte) int {
	switch string(key) {
	case "type":
		return memberType
	case "id":
		return memberID
	case "method":
		return memberMethod
	case "params":
		return memberParams
	case "ok":
		return memberOK
	case "value":
		return memberValue
	case "code":
		return memberCode
	case "event":
		return memberEvent
	}
	return -1
}

// only refuses a member that is not among allowed, as onlyKeys does.
func (m *envelopeMembers) only(allowed ...int) error {
	for i := range m.raw {
		if m.raw[i] != nil && !slices.Contains(allowed, i) {
			return invalid(memberNames[i], "is not allowed")
		}
	}
	if m.hasOther {
		key, _ := unquote(m.other) // eachMember checked it
		return invalid(key, "is not allowed")
	}
	return nil
}

// string is stringField of member i.
func (m *envelopeMembers) string(i int) (string, error) {
	if m.raw[i] == nil {
		return "", missing(memberNames[i])
	}
	return rawString(m.raw[i], memberNames[i])
}

// bool is boolField of member i.
func (m *envelopeMembers) bool(i int) (bool, error) {
	switch raw := m.raw[i]; {
	case raw == nil:
		return false, missing(memberNames[i])
	case string(raw) == "true":
		return true, nil
	case string(raw) == "false":
		return false, nil
	}
	return false, invalid(memberNames[i], "must be a boolean")
}

// id is idField of the id member.
func (m *envelopeMembers) id() (string, error) {
	s, err := m.string(memberID)
	if err != nil {
		return "", err
	}
	if loneSurrogate(m.raw[memberID]) {
		// Decoding turns it into U+FFFD, so a reply would carry another ID.
		return "", invalid("id", "must not escape a lone UTF-16 surrogate")
	}
	if !ValidID(s) {
		return "", invalid("id", "must be 1 to 128 characters")
	}
	return s, nil
}

// name is nameField of member i.
func (m *envelopeMembers) name(i int) (string, error) {
	s, err := m.string(i)
	if err != nil {
		return "", err
	}
	if !ValidName(s) {
		return "", invalid(memberNames[i], "must match [A-Za-z][A-Za-z0-9_.:-]* and be at most 128 characters")
	}
	return s, nil
}

// envelopeType is stringField of the type member, which is one of the
// four type names as a rule: those are matched without decoding.
func envelopeType(raw []byte) (string, error) {
	switch string(raw) {
	case `"request"`:
		return TypeRequest, nil
	case `"response"`:
		return TypeResponse, nil
	case `"event"`:
		return TypeEvent, nil
	case `"cancel"`:
		return TypeCancel, nil
	}
	return rawString(raw, "type")
}

// ValidID reports whether s is a valid transport ID: 1–128 code points.
func ValidID(s string) bool {
	n := utf8.RuneCountInString(s)
	return n >= 1 && n <= MaxIDLength
}

// ValidName reports whether s is a valid method, event or capability name.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alpha := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if i == 0 && !alpha {
			return false
		}
		if !alpha && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}
