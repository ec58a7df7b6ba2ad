package refusal_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/internal/refusal"
)

func TestRefuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trace bool
		env   string // value of CONN_TRACE_REFUSALS
		want  bool   // the reason reaches an info-level log
	}{
		{"quiet", false, "", false},
		{"configured", true, "", true},
		{"by environment", false, "1", true},
		{"environment not 1", false, "yes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(refusal.EnvAgent, tc.env)
			t.Setenv(refusal.EnvBroker, "")
			var buf bytes.Buffer
			l := refusal.New(slog.New(slog.NewTextHandler(&buf, nil)), tc.trace, refusal.EnvBroker, refusal.EnvAgent)
			l.Refuse("peer is another user", "uid", 4242)
			got := strings.Contains(buf.String(), `msg="refused: peer is another user" uid=4242`)
			if got != tc.want || l.Tracing() != tc.want {
				t.Fatalf("logged %q (tracing %v), want the reason %v", buf.String(), l.Tracing(), tc.want)
			}
		})
	}
	refusal.Log{}.Refuse("nothing happens") // the zero value discards
}
