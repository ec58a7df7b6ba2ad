package termsvc_test

import (
	"fmt"
	"testing"

	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

// BenchmarkRelay is an agent's round trip to a session relayed from its
// provider (broker term's side, over the broker socket) against the same
// session attached to the agent socket server in-process: what the relay's
// extra hop costs, for a snapshot of a full 80×24 screen and for status.
func BenchmarkRelay(b *testing.B) {
	fill := func(s *session.Session) {
		s.OwnerInput(fmt.Appendf(nil, "clear; for i in $(seq 1 24); do printf '%%080d' $i; done\r"))
		termtest.WaitSessionText(b, s, fmt.Sprintf("%080d", 23))
	}
	run := func(b *testing.B, a *termtest.Agent) {
		for _, method := range []string{"snapshot", "status"} {
			b.Run(method, func(b *testing.B) {
				for b.Loop() {
					if m := a.Call(method, nil); m.Error != nil {
						b.Fatal(m.Raw)
					}
				}
			})
		}
	}
	b.Run("direct", func(b *testing.B) {
		srv, path := termtest.StartServer(b, agentsock.Config{RateBurst: 1 << 30, RatePerSecond: 1 << 30})
		s := termtest.Headless(b, srv, session.Config{ID: "t1"})
		a := termtest.Dial(b, path)
		termtest.Admit(b, s, a, termtest.ConnOf(a.Hello("bench")))
		fill(s)
		run(b, a)
	})
	b.Run("relayed", func(b *testing.B) {
		d := startBrokerWith(b, "", true, agentsock.Config{RateBurst: 1 << 30, RatePerSecond: 1 << 30})
		s, _ := linked(b, d.dir, "")
		a := termtest.Dial(b, d.agentSocket)
		termtest.Admit(b, s, a, termtest.ConnOf(a.Hello("bench")))
		fill(s)
		run(b, a)
	})
}
