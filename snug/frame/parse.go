package frame

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-browser/broker/snug/internal/jsonread"
)

// Parse decodes and validates one frame from its JSON text, as the runner
// relays it. It returns the typed frame (*AppAnnounce, *AppMessage, …), or:
//
//   - [ErrIgnored] for a JSON value that is not Snug traffic (not an object,
//     or no "snug:…" type) and for an unknown snug:* type with a valid v (R2);
//   - an [*Error] for a rejected frame: UNSUPPORTED_VERSION when v is not 1
//     (R1), MALFORMED when the frame breaks its schema or a rule the schemas
//     cannot express (the strict frames' rules of §3 and §4), HOST_ERROR
//     wrapping [ErrTooLarge] when it is over its size class (R6). Its
//     [Error.Answer] says whether and how to answer it on the wire.
//
// The size class is checked on the raw bytes first: a frame over 256 KiB is
// scanned for its type, without decoding, and refused unless it is a db or
// net frame within its larger class.
//
// Parsing is tolerant (R2): unknown members of a frame are ignored, except
// on the strict frames net-request, net-response, open-url-request and
// open-url-result, whose fields become real effects. String bounds count
// Unicode code points, and integers are judged on their exact decimal value,
// as the published schemas do; the conformance tests hold Parse to those
// schemas.
func Parse(raw []byte) (Frame, error) {
	if len(raw) > MaxFrameBytes {
		if err := checkSize(raw); err != nil {
			return nil, err
		}
	}
	if t := jsonread.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		if json.Valid(raw) {
			return nil, ErrIgnored
		}
		return nil, malformed("", "is not JSON")
	}
	var obj jsonread.Members
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, malformed("", "is not JSON")
	}
	typ, ok := jsonread.String(obj["type"])
	if !ok || !strings.HasPrefix(typ, typePrefix) {
		return nil, ErrIgnored
	}
	t := Type(typ)
	if v, isInt := jsonread.Integer(obj["v"]); !isInt || v != ProtocolVersion {
		return nil, &Error{Code: CodeUnsupportedVersion, Type: t, RequestID: recoverID(obj["requestId"]),
			Field: "v", Reason: "must be 1 (this host supports protocol versions [1])"}
	}
	if !t.Known() {
		return nil, ErrIgnored
	}
	r := jsonread.NewReader(obj, "")
	f := parseKnown(t, r)
	if r.Err != nil {
		return nil, &Error{Code: CodeMalformed, Type: t, RequestID: recoverID(obj["requestId"]),
			Field: r.Err.Field, Reason: r.Err.Reason}
	}
	return f, nil
}

// recoverID returns a requestId worth answering: a string of 1–128
// characters (R1), else "".
func recoverID(raw json.RawMessage) string {
	if s, ok := jsonread.String(raw); ok && isID(s) {
		return s
	}
	return ""
}

// isID reports whether s is a plausible id: 1–128 characters (R1, R6).
func isID(s string) bool { n := jsonread.Chars(s); return n >= 1 && n <= MaxIDChars }

// checkSize applies the size classes (R6) to a frame over the smallest one,
// reading only its top-level type and requestId.
func checkSize(raw []byte) error {
	if !json.Valid(raw) {
		return malformed("", "is not JSON")
	}
	rawType, rawID, isObject := peekMembers(raw)
	if !isObject {
		return ErrIgnored
	}
	typ, ok := "", false
	if len(rawType) <= 64 { // no frame type is longer, even fully escaped
		typ, ok = jsonread.String(rawType)
	}
	t := Type(typ)
	if !ok || !strings.HasPrefix(typ, typePrefix) || !t.Known() {
		return ErrIgnored
	}
	if len(raw) <= t.SizeLimit() {
		return nil
	}
	id := ""
	if len(rawID) <= 2+12*MaxIDChars { // 128 characters as \uXXXX\uXXXX pairs
		id = recoverID(rawID)
	}
	return &Error{Code: CodeHostError, Type: t, RequestID: id, err: ErrTooLarge,
		Reason: "is " + strconv.Itoa(len(raw)) + " bytes, over its size class of " + strconv.Itoa(t.SizeLimit())}
}

func parseKnown(t Type, r *jsonread.Reader) Frame {
	switch t {
	case TypeAppAnnounce:
		return &AppAnnounce{
			AppID:       r.Str("appId", true, 1, MaxIDChars),
			DisplayName: r.Str("displayName", true, 1, MaxDisplayNameChars),
			Description: r.Str("description", false, 0, MaxDescriptionChars),
			IconEmoji:   r.Str("iconEmoji", false, 0, MaxIconEmojiChars),
			IconColor:   r.Str("iconColor", false, 0, MaxIconColorChars),
		}
	case TypeHostReady:
		return parseHostReady(r)
	case TypeAppMessage:
		return &AppMessage{
			RequestID:      r.Str("requestId", true, 1, MaxIDChars),
			InstanceID:     r.Str("instanceId", true, 1, MaxIDChars),
			AppID:          r.Str("appId", true, 1, MaxIDChars),
			Action:         r.Str("action", true, 1, MaxIDChars),
			Payload:        r.Value("payload", false),
			State:          r.Value("state", false),
			ResponseSchema: r.Value("responseSchema", false),
		}
	case TypeAppCancel:
		return &AppCancel{
			RequestID:  r.Str("requestId", true, 1, MaxIDChars),
			InstanceID: r.Str("instanceId", true, 1, MaxIDChars),
		}
	case TypeAppResponse:
		return parseAppResponse(r)
	case TypeDBRequest:
		return parseDBRequest(r)
	case TypeDBResponse:
		return parseDBResponse(r)
	case TypeNetRequest:
		return parseNetRequest(r)
	case TypeNetResponse:
		return parseNetResponse(r)
	case TypeOpenURLRequest:
		r.Only("v", "type", "requestId", "instanceId", "url")
		f := &OpenURLRequest{
			RequestID:  r.Str("requestId", true, 1, MaxIDChars),
			InstanceID: r.Str("instanceId", true, 1, MaxIDChars),
			URL:        r.Str("url", true, 1, MaxOpenURLChars),
		}
		if r.Err == nil {
			if err := checkOpenURL(f.URL); err != nil {
				r.Fail("url", err.Error())
			}
		}
		return f
	case TypeOpenURLResult:
		r.Only("v", "type", "requestId", "status", "reason")
		return &OpenURLResult{
			RequestID: r.Str("requestId", true, 1, MaxIDChars),
			Status:    OpenURLStatus(r.Enum("status", string(OpenURLOpened), string(OpenURLDeclined), string(OpenURLRefused))),
			Reason:    r.Str("reason", false, 0, MaxOpenURLReasonChars),
		}
	case TypeHostEvent:
		return &HostEvent{Event: r.Str("event", true, 1, MaxEventChars), Data: r.Value("data", false)}
	case TypeAppEvent:
		return &AppEvent{Event: r.Str("event", true, 1, MaxEventChars), Data: r.Value("data", false)}
	}
	panic("frame: parseKnown of unknown type " + string(t))
}

func parseHostReady(r *jsonread.Reader) *HostReady {
	f := &HostReady{InstanceID: r.Str("instanceId", true, 1, MaxIDChars)}
	if items := r.Array("protocolVersions", true); items != nil {
		f.ProtocolVersions = make([]int, 0, len(items))
		for i, item := range items {
			n, ok := jsonread.Integer(item)
			if !ok || n < 1 || n > jsonread.MaxSafeInteger {
				r.Fail("protocolVersions["+strconv.Itoa(i)+"]", "must be a positive integer")
				break
			}
			f.ProtocolVersions = append(f.ProtocolVersions, int(n))
		}
	}
	if obj := r.Object("capabilities", true); obj != nil {
		c := r.Sub("capabilities", obj)
		f.Capabilities = Capabilities{
			Streaming: c.Bool("streaming", true),
			DB:        c.Bool("db", true),
			Auth:      c.Bool("auth", true),
			Net:       c.Bool("net", false),
			OpenURL:   c.Bool("openUrl", false),
		}
		c.Bool("access", false) // [1.1] Part VI: checked as published, never advertised here
		r.Adopt(c)
	}
	f.Theme = Theme(r.Enum("theme", string(ThemeLight), string(ThemeDark)))
	f.Locale = r.Str("locale", false, 0, MaxLocaleChars)
	return f
}

func parseAppResponse(r *jsonread.Reader) *AppResponse {
	f := &AppResponse{OK: r.Bool("ok", true), RequestID: r.Str("requestId", true, 1, MaxIDChars)}
	switch {
	case r.Err != nil:
	case !f.OK:
		f.Error = parseError(r)
	default:
		f.Streaming = r.Bool("streaming", true)
		if f.Streaming {
			f.Text = r.Str("text", true, 0, -1)
			if seq, ok := r.Int("seq", false, 0, jsonread.MaxSafeInteger); ok {
				f.Seq = &seq
			}
		} else if r.Object("data", true) != nil {
			f.Data = r.Value("data", true)
		}
	}
	return f
}

// parseError reads the required error member of a response frame.
func parseError(r *jsonread.Reader) *ResponseError {
	obj := r.Object("error", true)
	if obj == nil {
		return nil
	}
	e := r.Sub("error", obj)
	out := &ResponseError{
		Code:       e.Str("code", true, 1, MaxErrorCodeChars),
		Message:    e.Str("message", true, 0, -1),
		Retryable:  e.Bool("retryable", true),
		RawExcerpt: e.Str("rawExcerpt", false, 0, RawExcerptChars),
	}
	if n, ok := e.Int("attemptsRemaining", false, 0, jsonread.MaxSafeInteger); ok {
		left := int(n)
		out.AttemptsRemaining = &left
	}
	r.Adopt(e)
	return out
}

func parseDBRequest(r *jsonread.Reader) *DBRequest {
	f := &DBRequest{
		RequestID:  r.Str("requestId", true, 1, MaxIDChars),
		InstanceID: r.Str("instanceId", true, 1, MaxIDChars),
		Op:         DBOp(r.Enum("op", string(DBExec), string(DBExport), string(DBImport), string(DBKVGet), string(DBKVSet))),
	}
	switch f.Op {
	case DBExec:
		f.SQL = r.Str("sql", true, 1, -1)
		if r.Array("params", false) != nil {
			f.Params = r.Value("params", false)
		}
	case DBImport:
		f.BytesBase64 = r.Str("bytesBase64", true, 1, -1)
	case DBKVGet:
		f.Key = r.Str("key", true, 1, MaxKVKeyChars)
	case DBKVSet:
		f.Key = r.Str("key", true, 1, MaxKVKeyChars)
		f.Value = r.Value("value", true)
	}
	return f
}

func parseDBResponse(r *jsonread.Reader) *DBResponse {
	f := &DBResponse{OK: r.Bool("ok", true), RequestID: r.Str("requestId", true, 1, MaxIDChars)}
	switch {
	case r.Err != nil:
	case !f.OK:
		f.Error = parseError(r)
	default:
		for i, row := range r.Array("rows", false) {
			if jsonread.Kind(row) != '[' {
				r.Fail("rows["+strconv.Itoa(i)+"]", "must be an array")
				break
			}
		}
		f.Rows = r.Value("rows", false)
		f.Columns = r.Strings("columns")
		f.Value = r.Value("value", false)
		f.BytesBase64 = r.Str("bytesBase64", false, 0, -1)
	}
	return f
}

func parseNetRequest(r *jsonread.Reader) *NetRequest {
	r.Only("v", "type", "requestId", "instanceId", "url", "method", "headers", "body")
	f := &NetRequest{
		RequestID:  r.Str("requestId", true, 1, MaxIDChars),
		InstanceID: r.Str("instanceId", true, 1, MaxIDChars),
		URL:        r.Str("url", true, 1, MaxNetURLChars),
		Method:     r.Enum("method", NetMethods[:]...),
		Headers:    headers(r, "headers", false, MaxHeaderNameChars, MaxHeaderValueChars),
	}
	if _, ok := r.Raw("body"); ok {
		body := r.Str("body", false, 0, MaxNetRequestBodyChars)
		f.Body = &body
	}
	if r.Err != nil {
		return f
	}
	// The rules of §3 that the schema cannot express.
	if f.Body != nil && (f.Method == "GET" || f.Method == "HEAD") {
		r.Fail("body", "is not allowed on "+f.Method)
	}
	for _, name := range sortedKeys(f.Headers) {
		if IsCredentialHeader(name) {
			r.Fail("headers."+name, "is a credential header, which may never cross the bridge (C1): the host injects credentials itself")
			break
		}
	}
	return f
}

// headers reads a string-to-string object member whose names have at most
// maxName characters and values at most maxValue (< 0: no bound); a
// net-request's names also have at least one.
func headers(r *jsonread.Reader, key string, required bool, maxName, maxValue int) map[string]string {
	obj := r.Object(key, required)
	if obj == nil {
		return nil
	}
	h := r.Sub(key, obj)
	out := make(map[string]string, len(obj))
	for _, name := range h.Names() {
		if n := jsonread.Chars(name); maxName >= 0 && (n < 1 || n > maxName) {
			h.Fail(strconv.Quote(name), "is not a header name of 1 to "+strconv.Itoa(maxName)+" characters")
			break
		}
		out[name] = h.Str(name, true, 0, maxValue)
	}
	r.Adopt(h)
	return out
}

func parseNetResponse(r *jsonread.Reader) *NetResponse {
	f := &NetResponse{OK: r.Bool("ok", true)}
	if r.Err != nil {
		return f
	}
	if !f.OK {
		r.Only("v", "type", "requestId", "ok", "error")
		f.RequestID = r.Str("requestId", true, 1, MaxIDChars)
		f.Error = parseError(r)
		return f
	}
	r.Only("v", "type", "requestId", "ok", "status", "headers", "body", "truncated")
	f.RequestID = r.Str("requestId", true, 1, MaxIDChars)
	status, _ := r.Int("status", true, 100, 599)
	f.Status = int(status)
	f.Headers = headers(r, "headers", true, -1, -1)
	f.Body = r.Str("body", true, 0, -1)
	f.Truncated = r.Bool("truncated", false)
	return f
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
