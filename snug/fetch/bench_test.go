package fetch_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
)

// BenchmarkGet is one GET of a provider's API, two ways, on the same TLS
// server (loopback, reached under its public name), side by side:
//
//   - path=governed: through the whole executor: the app's connection rows
//     and the key read from the real user database, the ten gates, the
//     guarded dial (its check runs when a connection is made; both paths
//     keep theirs alive), the injection, the read under its cap, the scrub
//     and the whitelist;
//   - path=direct: the same request made directly from Go with net/http,
//     the key set by hand.
//
// The difference is what governance costs per request.
func BenchmarkGet(b *testing.B) {
	w, s := connected(b)
	var d net.Dialer
	direct := &http.Client{Transport: &http.Transport{
		DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "tcp", s.Addr) },
		TLSClientConfig:   &tls.Config{RootCAs: w.ca.Pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
	}}
	const url = "https://api.todo.example/v1/tasks?done=0"
	b.Run("path=governed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if resp, ferr := w.do("GET", url, map[string]string{"Accept": "application/json"}, nil); ferr != nil || resp.Status != 200 {
				b.Fatalf("%+v %+v", resp, ferr)
			}
		}
	})
	b.Run("path=direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Accept", "application/json")
			req.Header.Set("X-Api-Key", key)
			resp, err := direct.Do(req)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("%v %v", resp, err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
	})
}
