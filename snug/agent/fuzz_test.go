package agent

import (
	"context"
	"strings"
	"testing"
)

// FuzzReadEvents: any event stream gives a reply within the bound or an
// error, and the reply is exactly the deltas handed out.
func FuzzReadEvents(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[]}\n: comment\nevent: x\ndata:{\"error\":{\"message\":\"no\"}}\n",
		"data: {\"choices\":[{\"message\":{\"content\":\"whole\"}}]}\n",
		"data: not json\n\ndata: [DONE]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream string) {
		var got strings.Builder
		text, err := readEvents(context.Background(), strings.NewReader(stream), func(d string) { got.WriteString(d) })
		if err != nil {
			return
		}
		if len(text) > MaxReplyBytes || text != got.String() {
			t.Fatalf("reply %q, deltas %q", text, got.String())
		}
	})
}
