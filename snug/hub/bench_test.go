package hub_test

import (
	"fmt"
	"testing"
)

// BenchmarkNetRequest is a governed GET through the broker's whole path: a
// snug:net-request frame from a runner tab over the broker socket, parsed
// by the hub, run through the executor (grant, ceiling, SSRF guard, key
// read and injected, the provider's TLS answer capped and scrubbed), and
// the snug:net-response frame back to the tab. Compare with
// snug/fetch's BenchmarkDirectGet, the same request made directly from Go.
func BenchmarkNetRequest(b *testing.B) {
	ne := startNet(b)
	ne.connect(b)
	i := 0
	for b.Loop() {
		i++
		got := ne.net(b, fmt.Sprintf("b%d", i), "GET", "https://api.todo.example/tasks", "")
		<-ne.keys
		if got["status"] != float64(200) {
			b.Fatalf("%v", got)
		}
	}
}
