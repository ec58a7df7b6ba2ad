package termsvc

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/wire"
)

type nopHandler struct{}

func (nopHandler) Handle(context.Context, *rpc.Request) (any, error) { return nil, nil }
func (nopHandler) Event(*wire.Envelope)                              {}

// A broker that does not read gets MaxQueuedEvents events queued and no
// more: the next drops the connection, and the session never waits.
func TestOutboxLimit(t *testing.T) {
	ours, theirs := net.Pipe() // nobody reads theirs
	defer theirs.Close()
	conn := rpc.New(ours, nopHandler{}, rpc.Limits{}, nil)
	go conn.Run()
	o := newOutbox(conn) // not pumped: everything stays queued
	for range MaxQueuedEvents {
		o.Event(agentapi.Event{Kind: agentapi.EventAttended})
	}
	select {
	case <-conn.Closed():
		t.Fatal("closed at the limit")
	default:
	}
	o.Event(agentapi.Event{Kind: agentapi.EventAttended})
	select {
	case <-conn.Closed():
	case <-time.After(5 * time.Second):
		t.Fatal("not closed past the limit")
	}
	if err := o.flush(context.Background()); err == nil {
		t.Fatal("flush of a closed outbox succeeded")
	}
}
