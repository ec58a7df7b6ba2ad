package runtime

import (
	"log/slog"
	"sync"

	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/service"
)

// testHost is an in-process stand-in for the broker: it holds the
// providers and clients a test connects.
type testHost struct {
	mu        sync.Mutex
	providers []service.Provider
	clients   map[uint64]service.Client
}

func newTestHost() *testHost { return &testHost{clients: make(map[uint64]service.Client)} }

func (h *testHost) Provider(id string) service.Provider {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.providers {
		if p.InstanceID() == id {
			return p
		}
	}
	return nil
}

func (h *testHost) Providers(kind string) []service.Provider {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []service.Provider
	for _, p := range h.providers {
		if p.Kind() == kind {
			out = append(out, p)
		}
	}
	return out
}

func (h *testHost) Client(conn uint64) service.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.clients[conn]
}

func (h *testHost) Journal() *journal.Journal { return nil }
func (h *testHost) Logger() *slog.Logger      { return slog.New(slog.DiscardHandler) }
