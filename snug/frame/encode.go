package frame

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf16"
)

// Encode returns the JSON text of a frame the host sends: *HostReady,
// *AppResponse (any of its three shapes), *DBResponse, *NetResponse,
// *OpenURLResult, or a [Hint] (a host-event, R7). It refuses anything else,
// including a parsed *HostEvent, whose data could be content.
//
// The result is checked as received frames are: it must parse back under
// the same rules, and fit its size class (else the error wraps
// [ErrTooLarge]). A nil HostReady.ProtocolVersions is sent as [1]; a
// net-response may carry only whitelisted headers.
func Encode(f Frame) ([]byte, error) {
	if isNil(f) {
		return nil, errors.New("snug frame: nil frame")
	}
	var v any
	switch f := f.(type) {
	case *HostReady:
		v = hostReadyJSON(f)
	case *AppResponse:
		v = appResponseJSON(f)
	case *DBResponse:
		v = dbResponseJSON(f)
	case *NetResponse:
		for name := range f.Headers {
			if !IsWhitelistedResponseHeader(name) {
				return nil, fmt.Errorf("snug frame: refusing to send net-response header %q, which is not whitelisted", name)
			}
		}
		v = netResponseJSON(f)
	case *OpenURLResult:
		v = &struct {
			V         int           `json:"v"`
			Type      Type          `json:"type"`
			RequestID string        `json:"requestId"`
			Status    OpenURLStatus `json:"status"`
			Reason    string        `json:"reason,omitempty"`
		}{ProtocolVersion, TypeOpenURLResult, f.RequestID, f.Status, f.Reason}
	case Hint:
		v = hintJSON(f)
	case *HostEvent:
		return nil, errors.New("snug frame: a host-event is sent only as a Hint, built from references (R7)")
	default:
		return nil, fmt.Errorf("snug frame: %s is not a frame the host sends", f.FrameType())
	}
	data, err := marshal(v)
	if err != nil {
		return nil, fmt.Errorf("snug frame: encoding %s: %v", f.FrameType(), err)
	}
	if limit := f.FrameType().SizeLimit(); len(data) > limit {
		return nil, fmt.Errorf("snug frame: %s of %d bytes: %w (%d)", f.FrameType(), len(data), ErrTooLarge, limit)
	}
	back, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("snug frame: refusing to send an invalid %s: %w", f.FrameType(), err)
	}
	if back.FrameType() != f.FrameType() {
		return nil, fmt.Errorf("snug frame: %s encoded as %s", f.FrameType(), back.FrameType())
	}
	return data, nil
}

// isNil reports whether f is nil or a nil pointer in a Frame.
func isNil(f Frame) bool {
	switch f := f.(type) {
	case nil:
		return true
	case *HostReady:
		return f == nil
	case *AppResponse:
		return f == nil
	case *DBResponse:
		return f == nil
	case *NetResponse:
		return f == nil
	case *OpenURLResult:
		return f == nil
	case *HostEvent:
		return f == nil
	}
	return false
}

// marshal encodes v without HTML escaping, which would only make frames
// bigger.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

type errorJSON struct {
	Code              string `json:"code"`
	Message           string `json:"message"`
	RawExcerpt        string `json:"rawExcerpt,omitempty"`
	AttemptsRemaining *int   `json:"attemptsRemaining,omitempty"`
	Retryable         bool   `json:"retryable"`
}

func toErrorJSON(e *ResponseError) *errorJSON {
	if e == nil {
		return nil
	}
	return &errorJSON{e.Code, e.Message, e.RawExcerpt, e.AttemptsRemaining, e.Retryable}
}

func hostReadyJSON(f *HostReady) any {
	versions := f.ProtocolVersions
	if versions == nil {
		versions = []int{ProtocolVersion}
	}
	type caps struct {
		Streaming bool `json:"streaming"`
		DB        bool `json:"db"`
		Auth      bool `json:"auth"`
		Net       bool `json:"net,omitempty"`
		OpenURL   bool `json:"openUrl,omitempty"`
	}
	c := f.Capabilities
	return &struct {
		V                int    `json:"v"`
		Type             Type   `json:"type"`
		InstanceID       string `json:"instanceId"`
		ProtocolVersions []int  `json:"protocolVersions"`
		Capabilities     caps   `json:"capabilities"`
		Theme            Theme  `json:"theme"`
		Locale           string `json:"locale,omitempty"`
	}{ProtocolVersion, TypeHostReady, f.InstanceID, versions, caps{c.Streaming, c.DB, c.Auth, c.Net, c.OpenURL}, f.Theme, f.Locale}
}

func appResponseJSON(f *AppResponse) any {
	out := &struct {
		V         int             `json:"v"`
		Type      Type            `json:"type"`
		RequestID string          `json:"requestId"`
		OK        bool            `json:"ok"`
		Streaming *bool           `json:"streaming,omitempty"`
		Text      *string         `json:"text,omitempty"`
		Seq       *int64          `json:"seq,omitempty"`
		Data      json.RawMessage `json:"data,omitempty"`
		Error     *errorJSON      `json:"error,omitempty"`
	}{V: ProtocolVersion, Type: TypeAppResponse, RequestID: f.RequestID, OK: f.OK}
	switch {
	case !f.OK:
		out.Error = toErrorJSON(f.Error)
	case f.Streaming:
		out.Streaming, out.Text, out.Seq = &f.Streaming, &f.Text, f.Seq
	default:
		out.Streaming, out.Data = &f.Streaming, f.Data
	}
	return out
}

func dbResponseJSON(f *DBResponse) any {
	out := &struct {
		V           int             `json:"v"`
		Type        Type            `json:"type"`
		RequestID   string          `json:"requestId"`
		OK          bool            `json:"ok"`
		Rows        json.RawMessage `json:"rows,omitempty"`
		Columns     *[]string       `json:"columns,omitempty"`
		Value       json.RawMessage `json:"value,omitempty"`
		BytesBase64 string          `json:"bytesBase64,omitempty"`
		Error       *errorJSON      `json:"error,omitempty"`
	}{V: ProtocolVersion, Type: TypeDBResponse, RequestID: f.RequestID, OK: f.OK}
	if !f.OK {
		out.Error = toErrorJSON(f.Error)
		return out
	}
	out.Rows, out.Value, out.BytesBase64 = f.Rows, f.Value, f.BytesBase64
	if f.Columns != nil {
		out.Columns = &f.Columns
	}
	return out
}

func netResponseJSON(f *NetResponse) any {
	if !f.OK {
		return &struct {
			V         int        `json:"v"`
			Type      Type       `json:"type"`
			RequestID string     `json:"requestId"`
			OK        bool       `json:"ok"`
			Error     *errorJSON `json:"error"`
		}{ProtocolVersion, TypeNetResponse, f.RequestID, false, toErrorJSON(f.Error)}
	}
	headers := f.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	return &struct {
		V         int               `json:"v"`
		Type      Type              `json:"type"`
		RequestID string            `json:"requestId"`
		OK        bool              `json:"ok"`
		Status    int               `json:"status"`
		Headers   map[string]string `json:"headers"`
		Body      string            `json:"body"`
		Truncated bool              `json:"truncated,omitempty"`
	}{ProtocolVersion, TypeNetResponse, f.RequestID, true, f.Status, headers, f.Body, f.Truncated}
}

// errorAnswer returns the frame that ends a request of type t with e: the
// answer type's error shape, or, for open-url, a refusal whose reason names
// e. The message is clamped to MaxErrorMessageChars.
func errorAnswer(t Type, requestID string, e ResponseError) Frame {
	e.Message = Clip(e.Message, MaxErrorMessageChars)
	switch t {
	case TypeAppMessage:
		return &AppResponse{RequestID: requestID, Error: &e}
	case TypeDBRequest:
		return &DBResponse{RequestID: requestID, Error: &e}
	case TypeNetRequest:
		return &NetResponse{RequestID: requestID, Error: &e}
	case TypeOpenURLRequest:
		reason := e.Code
		if e.Message != "" {
			reason += ": " + e.Message
		}
		return &OpenURLResult{RequestID: requestID, Status: OpenURLRefused, Reason: Clip(reason, MaxOpenURLReasonChars)}
	}
	return nil
}

// refusal encodes errorAnswer, non-retryable.
func refusal(t Type, requestID string, e ResponseError) ([]byte, bool) {
	e.Retryable = false
	f := errorAnswer(t, requestID, e)
	if f == nil {
		return nil, false
	}
	data, err := Encode(f)
	return data, err == nil
}

// Clip returns s cut to at most n UTF-16 code units, which also bounds its
// code points by n, never splitting a character: what this host puts in a
// bounded field (a rawExcerpt, a reason) fits as both it and a JavaScript
// app count. Invalid UTF-8 becomes U+FFFD first, as it would on the wire.
func Clip(s string, n int) string {
	s = string(bytes.ToValidUTF8([]byte(s), []byte("\uFFFD")))
	units := 0
	for i, r := range s {
		units += utf16.RuneLen(r)
		if units > n {
			return s[:i]
		}
	}
	return s
}
