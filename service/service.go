// Package service is the seam between the broker and the kinds of provider
// it hosts.
//
// A provider is a peer that offers something behind the broker — a browser
// (the extension, through nativehost), a Snug host, a terminal — and a
// client never talks to it directly. Each provider declares its kind in its
// hello. A kind's package contributes one [Service]: what a provider of that
// kind must advertise, the client methods of its namespace (browser.*,
// snug.*, term.*), the requests its providers may send to the broker, and
// what it does when a provider joins, leaves or sends an event. The broker
// core knows kinds only through the services it is given, the way ttrpc's
// service descriptors or tailscale's LocalAPI handler map are tables the
// server merely dispatches on.
package service

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/wire"
)

// Provider is a connected provider whose welcome is out.
type Provider interface {
	// InstanceID is the provider's instance ID from its hello, unique among
	// live providers.
	InstanceID() string
	// Kind is the provider's kind.
	Kind() string
	// Instance is the descriptor from its hello.
	Instance() wire.Instance
	// Capable reports whether the provider advertised a capability.
	Capable(capability string) bool
	// OwnerSurface reports whether the owner's own software runs this
	// provider — its peer process is an executable the broker trusts
	// (SO_PEERCRED), and its kind shows owner questions — so it may be asked
	// for the owner's consent. A provider that merely holds the token may
	// serve, but is never asked.
	OwnerSurface() bool
	// Call sends a request to the provider and waits for its answer. nil
	// params are sent as {}.
	Call(ctx context.Context, method string, params any) (json.RawMessage, error)
	// CallWithin is Call with a deadline d from now: past it the request is
	// cancelled and the error is context.DeadlineExceeded, as with a context
	// of that deadline, without making one.
	CallWithin(ctx context.Context, d time.Duration, method string, params any) (json.RawMessage, error)
	// Notify sends an event to the provider: one-way, queued in order
	// with the calls made to it. It must not be called from Joined (the
	// welcome is being queued then).
	Notify(event string, value any) error
}

// Client is a connected, welcomed client.
type Client interface {
	// ConnID identifies the connection for the broker's life.
	ConnID() uint64
	// Label says who the client is (its program and pid), for the owner.
	// It is never a permission.
	Label() string
	// Capable reports whether the client listed a capability in its hello.
	Capable(capability string) bool
	// JournalKey is the client's hello journalKey, or "" for a client that
	// sent none (its actions are fenced for its connection only).
	JournalKey() string
	// Notify sends an event to the client.
	Notify(event string, value any) error
	// Call sends a request to the client (browser.approveBatchStep).
	Call(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// Host is the broker as a service sees it.
type Host interface {
	// Provider returns the live provider of an instance, or nil.
	Provider(instanceID string) Provider
	// Providers returns the live providers of a kind, in the order they
	// joined.
	Providers(kind string) []Provider
	// Client returns the live client of a connection, or nil.
	Client(conn uint64) Client
	// Journal is the broker's durable action journal, or nil when the
	// broker runs without a state directory.
	Journal() *journal.Journal
	// Logger is the broker's logger.
	Logger() *slog.Logger
}

// Method is one client method a service contributes.
type Method struct {
	// Handle serves the method. A *wire.Error chooses the response's code;
	// any other error is answered INTERNAL_ERROR and logged with its cause.
	Handle func(ctx context.Context, c Client, params json.RawMessage) (any, error)
	// ReadOnly methods only read: a client that closed its write side still
	// gets their answers, while any other method is refused.
	ReadOnly bool
	// Discovery methods are answered ADMISSION_PENDING at once while the
	// owner has not yet admitted the connection; others wait for the answer.
	Discovery bool
	// Schema is the JSON Schema (draft 2020-12) of the method's params,
	// published in protocol/v1.schema.json. The broker validates params
	// against it before Handle runs (INVALID_REQUEST otherwise); nil skips
	// that check.
	Schema json.RawMessage
}

// ProviderMethod serves one request a provider of the service's kind may
// send to the broker.
type ProviderMethod func(ctx context.Context, p Provider, params json.RawMessage) (any, error)

// Kind describes the providers of one kind.
type Kind struct {
	// Name is the kind a provider's hello declares ("browser" when it
	// declares none, as the reference's extension does).
	Name string
	// Required lists the capabilities a provider of this kind must
	// advertise; one lacking any is refused PROTOCOL_MISMATCH.
	Required []string
	// CheckInstance validates a provider's instance descriptor; an error
	// refuses the hello with PROTOCOL_MISMATCH. Nil accepts any.
	CheckInstance func(wire.Instance) error
	// OwnerQuestions says providers of this kind can show the owner's
	// questions (admission); only those that are also an owner surface are
	// asked.
	OwnerQuestions bool
}

// Service is one kind's contribution to the broker. Its methods are called
// concurrently.
type Service interface {
	// Kind describes the service's providers.
	Kind() Kind
	// Offers lists the capabilities the broker offers every peer in its
	// welcome because this service is there.
	Offers() []string
	// Methods are the client methods of the service's namespace.
	Methods() map[string]Method
	// ProviderMethods are the requests a provider of this kind may send to
	// the broker; any other is refused POLICY_DENIED.
	ProviderMethods() map[string]ProviderMethod
	// Joined is called when a provider of this kind's welcome is queued.
	Joined(p Provider)
	// Gone is called when a provider of this kind disconnects.
	Gone(p Provider)
	// Event delivers an event a provider of this kind sent.
	Event(p Provider, event string, value json.RawMessage)
	// ClientGone is called when a client disconnects.
	ClientGone(conn uint64)
	// Status is the service's section of broker.status.
	Status() any
}

// Runner is a service with work of its own for the broker's life, such as
// serving another socket (the terminal kind's agent socket). The broker
// starts Run once it listens and cancels ctx when it shuts down, then
// waits for Run to return. An error from Run before ctx ends stops the
// broker with that error.
type Runner interface {
	Run(ctx context.Context) error
}

// Register binds a kind's service to the broker it joins; the broker calls
// it once, in New.
type Register func(h Host) (Service, error)
