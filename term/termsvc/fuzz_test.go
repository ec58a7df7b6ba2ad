package termsvc_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/termsvc"
	"github.com/dsh-browser/broker/wire"
)

// fakeHost and fakeProvider are stand-ins for the broker, only to feed the
// service what a provider could send without a socket in between.
type fakeHost struct{}

func (fakeHost) Provider(string) service.Provider    { return nil }
func (fakeHost) Providers(string) []service.Provider { return nil }
func (fakeHost) Client(uint64) service.Client        { return nil }
func (fakeHost) Journal() *journal.Journal           { return nil }
func (fakeHost) Logger() *slog.Logger                { return slog.New(slog.DiscardHandler) }

type fakeProvider struct{ owner bool }

func (fakeProvider) InstanceID() string { return "fuzz" }
func (fakeProvider) Kind() string       { return termsvc.Kind }
func (fakeProvider) Instance() wire.Instance {
	return wire.Instance{ID: "fuzz", Family: termsvc.Family}
}
func (fakeProvider) Capable(string) bool      { return true }
func (p fakeProvider) OwnerSurface() bool     { return p.owner }
func (fakeProvider) Notify(string, any) error { return nil }
func (fakeProvider) Call(context.Context, string, any) (json.RawMessage, error) {
	return nil, wire.Err(wire.CodeConnectionLost)
}
func (fakeProvider) CallWithin(context.Context, time.Duration, string, any) (json.RawMessage, error) {
	return nil, wire.Err(wire.CodeConnectionLost)
}

// FuzzProviderEvent feeds arbitrary term.event values and term.attach
// params to the service: nothing panics, and whatever a provider says, its
// session keeps the name the broker gave it.
func FuzzProviderEvent(f *testing.F) {
	for _, ev := range []agentapi.Event{
		{Kind: agentapi.EventState, State: &agentapi.State{ID: "other", Shared: true, Participants: []uint64{1}}},
		{Kind: agentapi.EventAdmission, Conn: 1, Allowed: true},
		{Session: "t9", Kind: agentapi.EventAgent, Conn: 1, Name: "tools_changed", Params: json.RawMessage(`{}`)},
		{Kind: agentapi.EventClosed},
		{Kind: "nonsense"},
	} {
		raw, _ := json.Marshal(ev)
		f.Add(raw, []byte(`{}`))
	}
	f.Add([]byte(`{"kind":"state"}`), []byte(`{"name":"t1"}`))
	f.Add([]byte(`null`), []byte(`{"name":"x y"}`))
	dir, err := os.MkdirTemp("", "fz")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	f.Fuzz(func(t *testing.T, value, attach []byte) {
		svc, err := termsvc.Register(termsvc.Config{Socket: agentsock.Config{SocketPath: filepath.Join(dir, "conn.sock")}})(fakeHost{})
		if err != nil {
			t.Fatal(err)
		}
		p := fakeProvider{owner: len(value)%2 == 0}
		res, err := svc.ProviderMethods()[termsvc.MethodAttach](context.Background(), p, attach)
		if err != nil {
			return // a refused name: nothing attached
		}
		name := res.(termsvc.AttachResult).Session
		svc.Event(p, termsvc.EventSession, value)
		st := svc.Status().(termsvc.Status)
		if len(st.Sessions) != 1 || st.Sessions[0].ID != name {
			t.Fatalf("after %q the sessions are %+v, want only %q", value, st.Sessions, name)
		}
		svc.Gone(p)
	})
}
