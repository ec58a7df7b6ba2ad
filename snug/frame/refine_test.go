package frame_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/frame"
)

// TestRefinements checks each prose rule the schemas cannot express on its
// own cases: the published schema accepts the frame, and Parse refuses it
// with the rule's code, naming the member at fault.
func TestRefinements(t *testing.T) {
	want := map[string]struct {
		code, field string
	}{
		ruleSizeClass:        {frame.CodeHostError, ""},
		ruleBodyOnGet:        {frame.CodeMalformed, "body"},
		ruleCredentialHeader: {frame.CodeMalformed, "headers."},
		ruleOpenURL:          {frame.CodeMalformed, "url"},
	}
	seen := map[string]int{}
	for _, g := range goldens() {
		if g.refinement == "" {
			continue
		}
		seen[g.refinement]++
		t.Run(g.kind+"/"+g.name, func(t *testing.T) {
			if valid, _ := schemaVerdict(t, g.kind, []byte(g.json)); !valid {
				t.Fatalf("the published schema refuses it: not a refinement case")
			}
			_, err := frame.Parse([]byte(g.json))
			e, ok := errors.AsType[*frame.Error](err)
			if !ok {
				t.Fatalf("Parse error %v, want a *frame.Error", err)
			}
			w := want[g.refinement]
			if e.Code != w.code || !strings.HasPrefix(e.Field, w.field) {
				t.Errorf("refused %s at %q, want %s at %q… (%v)", e.Code, e.Field, w.code, w.field, e)
			}
			if g.refinement == ruleSizeClass && !errors.Is(err, frame.ErrTooLarge) {
				t.Errorf("error %v does not wrap ErrTooLarge", err)
			}
		})
	}
	for rule := range want {
		if seen[rule] == 0 {
			t.Errorf("no case for the refinement %q", rule)
		}
	}
}

// TestOpenURLRule lists what the §4 rule admits beyond the schema's length
// bound, case by case.
func TestOpenURLRule(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string // "" for accepted, else a word of the reason
	}{
		{"https://example.com/path?q=1#frag", ""},
		{"https://EXAMPLE.com", ""},
		{"https://example.com:443/", ""},
		{"https://example.com:65535/", ""},
		{"https://example.com:65536/", "port"},
		{"http://example.com/", "https"},
		{"wss://example.com/", "https"},
		{"https://a@example.com/", "username"},
		{"https://a:b@example.com/", "username"},
		{"https://:b@example.com/", "username"},
		{"https:opaque", "absolute"},
		{"https://", "absolute"},
		{"https://[fe80::1%25en0]/", "IPv6"},
		{"https://[::ffff:1.2.3.4]/", ""},
		{"https://ex%41mple.com/", "parse"}, // a browser decodes it; refusing is the safe side
		{"https://exa%00mple.com/", "parse"},
		{"https://exa_mple.com/", ""},
		{"https://ex%C3%A4mple.com/", ""},
		{"https://exa<mple.com/", "browser"},
		{"%zz", "parse"},
	} {
		err := frame.CheckOpenURL(tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q refused: %v", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one about %q", tc.url, err, tc.want)
		}
	}
}
