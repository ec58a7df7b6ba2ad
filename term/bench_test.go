package term_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

// BenchmarkSnapshot is an agent's snapshot round trip over the socket, of
// a screen full of text, with a status round trip (no grid) as the
// baseline. B/snapshot is the answer's size on the wire.
func BenchmarkSnapshot(b *testing.B) {
	for _, size := range []struct{ rows, cols int }{{24, 80}, {80, 240}} {
		srv, path := termtest.StartServer(b, agentsock.Config{Admission: agentsock.AdmissionOpen, RateBurst: 1 << 30, RatePerSecond: 1 << 30})
		s := termtest.Headless(b, srv, session.Config{ID: "t1", Rows: size.rows, Cols: size.cols})
		a := termtest.Dial(b, path)
		termtest.Admit(b, s, a, termtest.ConnOf(a.Hello("bench")))
		// Every row full: the largest answer for the size.
		s.OwnerInput(fmt.Appendf(nil, "clear; for i in $(seq 1 %d); do printf '%%0%dd' $i; done\r", size.rows, size.cols))
		termtest.WaitSessionText(b, s, fmt.Sprintf("%0*d", size.cols, size.rows-1))
		b.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(b *testing.B) {
			bytes := 0
			for b.Loop() {
				m := a.Call("snapshot", nil)
				if m.Error != nil {
					b.Fatal(m.Raw)
				}
				bytes = len(m.Raw) + 1
			}
			b.ReportMetric(float64(bytes), "B/snapshot")
		})
		b.Run(fmt.Sprintf("%dx%d-status", size.cols, size.rows), func(b *testing.B) {
			for b.Loop() {
				if m := a.Call("status", nil); m.Error != nil {
					b.Fatal(m.Raw)
				}
			}
		})
	}
}

// BenchmarkKeystroke is one keystroke's round trip to the person's screen:
// an agent's type (socket, server, session, PTY, the shell's echo, the
// owner's terminal, the person's emulator), with the person typing the
// same key into their own terminal as the baseline.
func BenchmarkKeystroke(b *testing.B) {
	srv, path := termtest.StartServer(b, agentsock.Config{RateBurst: 1 << 30, RatePerSecond: 1 << 30})
	sc := termtest.Shell(b)
	sc.Mode, sc.OpenControl = agentapi.ModeAutopilot, true
	o := termtest.StartOwner(b, termtest.OwnerConfig{Session: sc, Server: srv})
	o.WaitText("$")
	// cat echoes each key through the terminal's line discipline.
	o.Type("cat >/dev/null\r")
	o.WaitText("$ cat >/dev/null\n")
	a := termtest.Dial(b, path)
	termtest.Join(b, o, a, "typist")

	// A key has arrived when its echo reached the person's terminal.
	wait := func(off int, key byte) {
		deadline := time.Now().Add(termtest.Timeout)
		for !o.ReceivedSince(off, key) {
			select {
			case <-o.Chunks():
			case <-time.After(time.Millisecond):
			}
			if time.Now().After(deadline) {
				b.Fatalf("the key never reached the screen:\n%s", strings.Join(o.Screen(), "\n"))
			}
		}
	}
	b.Run("agent-type", func(b *testing.B) {
		a.Must("request_control", nil, nil)
		for b.Loop() {
			off := o.Len()
			if m := a.Call("type", map[string]any{"text": "@"}); m.Error != nil {
				b.Fatal(m.Raw)
			}
			wait(off, '@')
		}
	})
	b.Run("owner-typing", func(b *testing.B) {
		for b.Loop() {
			off := o.Len()
			o.Type("%")
			wait(off, '%')
		}
	})
}
