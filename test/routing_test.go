package test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// provider registers a raw provider peer standing in for the extension at
// this layer. It connects as the extension does, through the real
// nativehost, so the broker treats it as the owner's browser (an owner
// surface).
func provider(t *testing.T, b *testenv.Broker, id string) *testenv.Peer {
	t.Helper()
	p := b.OwnerPeer(t)
	if r := p.Call("hello", testenv.ProviderHello("", id)); !r.OK {
		t.Fatalf("provider hello: %s", r.Code)
	}
	return p
}

func TestTabsRoutedToProvider(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t, "--allow-origin", "https://allowed.test")
	prov := provider(t, b, "inst")
	c := b.Client(t, testenv.ClientOptions())

	type result struct {
		raw json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		raw, err := c.Call(context.Background(), "browser.tabs", map[string]any{"sessionId": "s1", "instanceId": "inst"})
		done <- result{raw, err}
	}()
	req := prov.Read()
	if req.Type != wire.TypeRequest || req.Method != "tabs.list" || string(req.Params) != "{}" {
		t.Fatalf("provider got %+v, want tabs.list {}", req)
	}
	tabs := []browser.TabSummary{
		{ID: "inst:1", InstanceID: "inst", URL: "https://allowed.test/page", Title: "Allowed"},
		{ID: "inst:2", InstanceID: "inst", URL: "https://other.test/", Title: "Not allowlisted"},
		{ID: "inst:3", InstanceID: "inst", URL: "chrome://settings", Title: "Never claimable"},
		{ID: "inst:4", InstanceID: "other", URL: "https://allowed.test/", Title: "Wrong instance"},
		{ID: "inst:5", InstanceID: "inst", URL: "https://user:pw@allowed.test/", Title: "Credentials"},
	}
	value, _ := json.Marshal(tabs)
	env, _ := wire.Encode(wire.Success(req.ID, value))
	prov.Send(string(env))
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	var got []browser.TabSummary
	json.Unmarshal(res.raw, &got)
	if len(got) != 1 || got[0].ID != "inst:1" {
		t.Fatalf("got %+v, want only the allowlisted HTTP(S) tab", got)
	}

	for name, params := range map[string]any{
		"unknown field":    map[string]any{"sessionId": "s", "instanceId": "inst", "x": 1},
		"missing instance": map[string]any{"sessionId": "s"},
		"empty session":    map[string]any{"sessionId": "", "instanceId": "inst"},
	} {
		if _, err := c.Call(context.Background(), "browser.tabs", params); !errors.Is(err, wire.Err(wire.CodeInvalidRequest)) {
			t.Errorf("%s: %v, want INVALID_REQUEST", name, err)
		}
	}
	if _, err := c.Call(context.Background(), "browser.tabs", map[string]any{"sessionId": "s", "instanceId": "gone"}); !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
		t.Errorf("unknown instance: %v, want CONNECTION_LOST", err)
	}
}

func TestClientCancelReachesProvider(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	prov := provider(t, b, "inst")
	c := b.Client(t, testenv.ClientOptions())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "browser.tabs", map[string]any{"sessionId": "s", "instanceId": "inst"})
		errc <- err
	}()
	req := prov.Read()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("client call: %v", err)
	}
	if env := prov.Read(); env.Type != wire.TypeCancel || env.ID != req.ID {
		t.Fatalf("provider got %+v, want a cancel of %s", env, req.ID)
	}
	// The late reply is ignored and the broker keeps serving.
	late, _ := wire.Encode(wire.Success(req.ID, json.RawMessage(`[]`)))
	prov.Send(string(late))
	if _, err := c.Call(context.Background(), "browser.instances", nil); err != nil {
		t.Fatal(err)
	}
}

func TestProviderLossFailsPendingClientCalls(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	prov := provider(t, b, "inst")
	c := b.Client(t, testenv.ClientOptions())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "browser.tabs", map[string]any{"sessionId": "s", "instanceId": "inst"})
		errc <- err
	}()
	prov.Read()
	prov.Send(`{"type":"response","id":"never-sent","ok":true,"value":null,"extra":1}`) // malformed: closes the provider
	select {
	case err := <-errc:
		if !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
			t.Fatalf("pending client call: %v, want CONNECTION_LOST", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pending call never failed")
	}
	raw, _ := c.Call(context.Background(), "browser.instances", nil)
	if string(raw) != "[]" {
		t.Fatalf("closed provider still listed: %s", raw)
	}
}
