// Package chat is the agent side of Part I: the chat envelope a host sends
// to its own agent for an app-originated turn (§6), the agent reply
// contract with its graduated-tolerance parser, and the parse-failure
// budget (R6).
//
// A turn, as the host runs it:
//
//	if budget.Exhausted() {
//		return p.Fail(chat.ExhaustedError()) // the agent is not called
//	}
//	text, _ := chat.EnvelopeFor(msg).Text()  // sent to the agent
//	data, err := chat.ParseReply(reply)
//	if err != nil {
//		return p.Fail(budget.Fail(err)) // PARSE_FAILED, rawExcerpt, attemptsRemaining
//	}
//	budget.Succeed()
//	return p.Respond(&frame.AppResponse{OK: true, Data: data})
package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/internal/jsonread"
)

// Tag prefixes the chat envelope on the wire ([SNUG_APP_REQUEST]).
const Tag = "[SNUG_APP_REQUEST]"

// Envelope is the body of an app request to the host's agent: what the
// app-message asked, self-contained (the state travels with it, so servers
// can skip thread history). On the wire it is Tag, a newline, and the JSON
// object {snug: 1, appId, instanceId, requestId, action, payload?, state?,
// responseSchema?}. Two independent signals, the tag and snug: 1, mark it,
// so chat text that merely quotes the tag is never taken for one.
type Envelope struct {
	AppID          string
	InstanceID     string
	RequestID      string
	Action         string
	Payload        json.RawMessage // nil omits it
	State          json.RawMessage // nil omits it
	ResponseSchema json.RawMessage // nil omits it
}

// ErrNotEnvelope: the text is not a chat envelope.
var ErrNotEnvelope = errors.New("not a Snug chat envelope")

// EnvelopeFor returns the envelope of an accepted app-message.
func EnvelopeFor(m *frame.AppMessage) Envelope {
	return Envelope{AppID: m.AppID, InstanceID: m.InstanceID, RequestID: m.RequestID, Action: m.Action,
		Payload: m.Payload, State: m.State, ResponseSchema: m.ResponseSchema}
}

// Text returns the envelope's wire form. It fails when the envelope would
// not parse back.
func (e Envelope) Text() (string, error) {
	body := struct {
		Snug           int             `json:"snug"`
		AppID          string          `json:"appId"`
		InstanceID     string          `json:"instanceId"`
		RequestID      string          `json:"requestId"`
		Action         string          `json:"action"`
		Payload        json.RawMessage `json:"payload,omitempty"`
		State          json.RawMessage `json:"state,omitempty"`
		ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	}{frame.ProtocolVersion, e.AppID, e.InstanceID, e.RequestID, e.Action, e.Payload, e.State, e.ResponseSchema}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&body); err != nil {
		return "", fmt.Errorf("chat envelope: %v", err)
	}
	text := Tag + "\n" + strings.TrimSuffix(b.String(), "\n")
	if _, err := ParseEnvelope(text); err != nil {
		return "", fmt.Errorf("chat envelope: refusing to send: %w", err)
	}
	return text, nil
}

// ParseEnvelope reads a chat envelope: the Tag prefix, one optional line
// break, and a JSON object that carries snug: 1 and the envelope's fields
// (unknown members are ignored). Any other text wraps [ErrNotEnvelope].
func ParseEnvelope(text string) (*Envelope, error) {
	body, ok := strings.CutPrefix(text, Tag)
	if !ok {
		return nil, fmt.Errorf("%w: no %s tag", ErrNotEnvelope, Tag)
	}
	if rest, ok := strings.CutPrefix(body, "\r\n"); ok {
		body = rest
	} else {
		body = strings.TrimPrefix(body, "\n")
	}
	obj, ok := jsonread.Object([]byte(body))
	if !ok {
		return nil, fmt.Errorf("%w: the body is not a JSON object", ErrNotEnvelope)
	}
	if v, isInt := jsonread.Integer(obj["snug"]); !isInt || v != frame.ProtocolVersion {
		return nil, fmt.Errorf("%w: snug must be 1", ErrNotEnvelope)
	}
	r := jsonread.NewReader(obj, "")
	e := &Envelope{
		AppID:          r.Str("appId", true, 1, frame.MaxIDChars),
		InstanceID:     r.Str("instanceId", true, 1, frame.MaxIDChars),
		RequestID:      r.Str("requestId", true, 1, frame.MaxIDChars),
		Action:         r.Str("action", true, 1, frame.MaxIDChars),
		Payload:        r.Value("payload", false),
		State:          r.Value("state", false),
		ResponseSchema: r.Value("responseSchema", false),
	}
	if r.Err != nil {
		return nil, fmt.Errorf("%w: %s %s", ErrNotEnvelope, r.Err.Field, r.Err.Reason)
	}
	return e, nil
}

// IsEnvelope reports whether text is a chat envelope.
func IsEnvelope(text string) bool {
	_, err := ParseEnvelope(text)
	return err == nil
}
