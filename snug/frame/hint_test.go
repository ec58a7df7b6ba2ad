package frame_test

import (
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/frame"
)

func TestHintEncodes(t *testing.T) {
	for _, tc := range []struct {
		event string
		data  map[string]frame.HintValue
		want  string
	}{
		{"theme-change", map[string]frame.HintValue{"theme": frame.Ref("dark")}, `{"v":1,"type":"snug:host-event","event":"theme-change","data":{"theme":"dark"}}`},
		{"resize", map[string]frame.HintValue{"height": frame.Count(480)}, `{"v":1,"type":"snug:host-event","event":"resize","data":{"height":480}}`},
		{"visibility", map[string]frame.HintValue{"visible": frame.Flag(false)}, `{"v":1,"type":"snug:host-event","event":"visibility","data":{"visible":false}}`},
		{"connection-event", map[string]frame.HintValue{"state": frame.Ref("revoked"), "slot": frame.Ref("github")},
			`{"v":1,"type":"snug:host-event","event":"connection-event","data":{"slot":"github","state":"revoked"}}`},
		{"data.changed", map[string]frame.HintValue{"table": frame.Ref("notes"), "version": frame.Count(-9007199254740991)},
			`{"v":1,"type":"snug:host-event","event":"data.changed","data":{"table":"notes","version":-9007199254740991}}`},
		{"ping", nil, `{"v":1,"type":"snug:host-event","event":"ping"}`},
	} {
		h, err := frame.NewHint(tc.event, tc.data)
		if err != nil {
			t.Fatalf("NewHint(%s): %v", tc.event, err)
		}
		got, err := frame.Encode(h)
		if err != nil || string(got) != tc.want {
			t.Errorf("Encode(%s) = %s, %v\nwant %s", tc.event, got, err, tc.want)
		}
	}
}

// TestHintRefusesContent: R7, a hint carries references, never content.
// Its values are Ref, Count or Flag by type; these are the checks on what
// those types can still hold.
func TestHintRefusesContent(t *testing.T) {
	many := map[string]frame.HintValue{}
	for i := range frame.MaxHintFields + 1 {
		many["f"+strings.Repeat("x", i)] = frame.Flag(true)
	}
	for name, tc := range map[string]struct {
		event string
		data  map[string]frame.HintValue
	}{
		"an empty event":        {"", nil},
		"an upper-case event":   {"Theme-Change", nil},
		"an event with a space": {"theme change", nil},
		"an event of 65":        {"e" + strings.Repeat("x", 64), nil},
		"a name with a space":   {"e", map[string]frame.HintValue{"a b": frame.Flag(true)}},
		"an empty name":         {"e", map[string]frame.HintValue{"": frame.Flag(true)}},
		"prose":                 {"e", map[string]frame.HintValue{"note": frame.Ref("Meet Bob at 5")}},
		"markup":                {"e", map[string]frame.HintValue{"note": frame.Ref("<b>hi</b>")}},
		"JSON":                  {"e", map[string]frame.HintValue{"note": frame.Ref(`{"a":1}`)}},
		"a newline":             {"e", map[string]frame.HintValue{"note": frame.Ref("a\nb")}},
		"an empty reference":    {"e", map[string]frame.HintValue{"id": frame.Ref("")}},
		"a reference of 129":    {"e", map[string]frame.HintValue{"id": frame.Ref(strings.Repeat("r", 129))}},
		"a count past 2^53-1":   {"e", map[string]frame.HintValue{"n": frame.Count(1 << 53)}},
		"no value":              {"e", map[string]frame.HintValue{"n": nil}},
		"17 members":            {"e", many},
	} {
		if _, err := frame.NewHint(tc.event, tc.data); err == nil {
			t.Errorf("NewHint accepted %s", name)
		}
	}
	if _, err := frame.NewHint("e", map[string]frame.HintValue{"id": frame.Ref(strings.Repeat("r", 128))}); err != nil {
		t.Errorf("a reference of 128: %v", err)
	}
	if _, err := frame.NewHint("e"+strings.Repeat("x", 63), nil); err != nil {
		t.Errorf("an event of 64: %v", err)
	}
}

// TestHostEventOnlyFromHint: a host-event with raw data cannot be sent.
func TestHostEventOnlyFromHint(t *testing.T) {
	if _, err := frame.Encode(&frame.HostEvent{Event: "theme-change", Data: []byte(`{"rows":[["secret"]]}`)}); err == nil {
		t.Error("Encode sent a host-event built from raw data")
	}
	data := map[string]frame.HintValue{"theme": frame.Ref("dark")}
	h, _ := frame.NewHint("theme-change", data)
	data["theme"] = frame.Ref("injected")
	if got, _ := frame.Encode(h); !strings.Contains(string(got), `"dark"`) {
		t.Errorf("the hint changed with the caller's map: %s", got)
	}
}

// TestEncodeRefuses: Encode sends only host frames, valid ones.
func TestEncodeRefuses(t *testing.T) {
	for name, f := range map[string]frame.Frame{
		"an app frame":           &frame.AppMessage{RequestID: "r", InstanceID: "i", AppID: "a", Action: "x"},
		"nil":                    nil,
		"a nil app-response":     (*frame.AppResponse)(nil),
		"a nil host-event":       (*frame.HostEvent)(nil),
		"host-ready, no id":      &frame.HostReady{Theme: frame.ThemeDark},
		"host-ready, no theme":   &frame.HostReady{InstanceID: "i"},
		"a result without id":    &frame.DBResponse{OK: true},
		"an error without error": &frame.AppResponse{RequestID: "r"},
		"an open-url status":     &frame.OpenURLResult{RequestID: "r", Status: "maybe"},
		"a reason of 301":        &frame.OpenURLResult{RequestID: "r", Status: frame.OpenURLDeclined, Reason: strings.Repeat("r", 301)},
		"an unknown net header":  &frame.NetResponse{RequestID: "r", OK: true, Status: 200, Headers: map[string]string{"Server": "x"}},
	} {
		if data, err := frame.Encode(f); err == nil {
			t.Errorf("Encode(%s) = %s, want a refusal", name, data)
		}
	}
}

// TestEncodeShapes pins the wire text of each host frame.
func TestEncodeShapes(t *testing.T) {
	seq, left := int64(3), 0
	for _, tc := range []struct {
		f    frame.Frame
		want string
	}{
		{&frame.HostReady{InstanceID: "ins-1", Capabilities: frame.Capabilities{Streaming: true, DB: true}, Theme: frame.ThemeDark},
			`{"v":1,"type":"snug:host-ready","instanceId":"ins-1","protocolVersions":[1],"capabilities":{"streaming":true,"db":true,"auth":false},"theme":"dark"}`},
		{&frame.HostReady{InstanceID: "ins-1", ProtocolVersions: []int{1}, Capabilities: frame.Capabilities{Net: true, OpenURL: true}, Theme: frame.ThemeLight, Locale: "de"},
			`{"v":1,"type":"snug:host-ready","instanceId":"ins-1","protocolVersions":[1],"capabilities":{"streaming":false,"db":false,"auth":false,"net":true,"openUrl":true},"theme":"light","locale":"de"}`},
		{&frame.AppResponse{RequestID: "r1", OK: true, Streaming: true, Text: "<Hi>", Seq: &seq},
			`{"v":1,"type":"snug:app-response","requestId":"r1","ok":true,"streaming":true,"text":"<Hi>","seq":3}`},
		{&frame.AppResponse{RequestID: "r1", OK: true, Data: []byte(`{ "message" : "hi" }`)},
			`{"v":1,"type":"snug:app-response","requestId":"r1","ok":true,"streaming":false,"data":{"message":"hi"}}`},
		{&frame.AppResponse{RequestID: "r1", Error: &frame.ResponseError{Code: "PARSE_FAILED", Message: "m", RawExcerpt: "x", AttemptsRemaining: &left}},
			`{"v":1,"type":"snug:app-response","requestId":"r1","ok":false,"error":{"code":"PARSE_FAILED","message":"m","rawExcerpt":"x","attemptsRemaining":0,"retryable":false}}`},
		{&frame.DBResponse{RequestID: "d1", OK: true, Rows: []byte(`[[1]]`), Columns: []string{}, Value: []byte(`null`)},
			`{"v":1,"type":"snug:db-response","requestId":"d1","ok":true,"rows":[[1]],"columns":[],"value":null}`},
		{&frame.DBResponse{RequestID: "d1", OK: true},
			`{"v":1,"type":"snug:db-response","requestId":"d1","ok":true}`},
		{&frame.NetResponse{RequestID: "n1", OK: true, Status: 204},
			`{"v":1,"type":"snug:net-response","requestId":"n1","ok":true,"status":204,"headers":{},"body":""}`},
		{&frame.NetResponse{RequestID: "n1", OK: true, Status: 200, Headers: map[string]string{"x-ratelimit-reset": "1", "ETag": "e"}, Body: "b", Truncated: true},
			`{"v":1,"type":"snug:net-response","requestId":"n1","ok":true,"status":200,"headers":{"ETag":"e","x-ratelimit-reset":"1"},"body":"b","truncated":true}`},
		{&frame.NetResponse{RequestID: "n1", Error: &frame.ResponseError{Code: frame.CodeNetConfirmDenied, Message: "m"}},
			`{"v":1,"type":"snug:net-response","requestId":"n1","ok":false,"error":{"code":"NET_CONFIRM_DENIED","message":"m","retryable":false}}`},
		{&frame.OpenURLResult{RequestID: "o1", Status: frame.OpenURLOpened},
			`{"v":1,"type":"snug:open-url-result","requestId":"o1","status":"opened"}`},
	} {
		got, err := frame.Encode(tc.f)
		if err != nil || string(got) != tc.want {
			t.Errorf("Encode(%T) = %s, %v\nwant %s", tc.f, got, err, tc.want)
		}
	}
}
