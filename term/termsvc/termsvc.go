// Package termsvc is the terminal provider kind: the owner's `broker term`
// registers with the broker as a provider of kind "terminal", and the
// broker relays its session to agents on the agent socket
// (RUNTIME/conn.sock, spec/agent-socket-v2.md).
//
// Both ends of the relay live here. [Register] is the broker's side: the
// kind's service, which serves the agent socket ([agentsock.Server]) for
// the broker's life and attaches each terminal provider to it as one
// session (one tab), detaching it when the provider goes. [Link] is the
// provider's side: it connects a local [session.Session]-like session to
// the broker, reconnecting when the broker comes back, while the session
// stays private to its owner in between.
//
// # Relay
//
// The relay is the [agentapi.Session] contract carried over the v1
// connection of the provider (framed envelopes on RUNTIME/broker.sock):
//
//	provider → broker  request  term.attach  {name?} → {session}
//	broker → provider  request  term.call    agentapi.Request → CallResult
//	broker → provider  event    term.release {conn}
//	broker → provider  event    term.peers   {peers}
//	provider → broker  event    term.event   agentapi.Event
//	broker → provider  request  admission.request {connection:{id,label}} → {allowed}
//
// After term.attach the provider takes the session name the broker chose
// and reports the session's events, starting with its state. A session's
// events and its answers travel on that one ordered connection, events
// first, so the agent socket's generation check sees every revocation
// that happened before an answer. Error answers ride inside CallResult:
// v1 error responses carry only a registry code, and an agent needs the
// spec's code and message.
//
// # Owner surfaces
//
// Only the owner admits agents. An admission answer (the owner pressing y
// in the bar of `broker term`) is accepted only from a provider that is an
// owner surface — its process is the broker binary itself, checked with
// SO_PEERCRED when it connected ([service.Provider.OwnerSurface]). Any
// other program holding the token may register a terminal and serve it to
// agents the owner admitted, but it never hears of pending connections and
// its admission answers are dropped (and traced). A terminal provider that
// is an owner surface also answers the broker's own admission questions
// about v1 clients (admission.request, under --admission=prompt) in its
// bar.
package termsvc

import "github.com/dsh-browser/broker/term/agentapi"

// Kind, family and capability of terminal providers.
const (
	// Kind is the provider kind `broker term` declares in its hello.
	Kind = "terminal"
	// Family is the instance family of a terminal provider.
	Family = "terminal"
	// CapSession is the capability a terminal provider must advertise: it
	// serves one session over this relay.
	CapSession = "term.session.v1"
)

// Messages of the relay (see the package comment).
const (
	MethodAttach = "term.attach"
	MethodCall   = "term.call"
	EventRelease = "term.release"
	EventPeers   = "term.peers"
	EventSession = "term.event"
)

// Limits.
const (
	// MaxName bounds a session name a provider asks for, in bytes.
	MaxName = 32
	// MaxQueuedEvents bounds the events a provider holds for a broker that
	// does not read them; past it the provider drops the connection and
	// connects again.
	MaxQueuedEvents = 4096
)

// AttachParams are term.attach's params. Name is the session name the
// owner asked for (`broker term --id`); the broker uses it when no other
// session has it, and names the session t1, t2, … otherwise.
type AttachParams struct {
	Name string `json:"name,omitempty"`
}

// AttachResult names the session agents will know.
type AttachResult struct {
	Session string `json:"session"`
}

// CallResult is term.call's value: exactly one of Reply and Error.
type CallResult struct {
	Reply *agentapi.Reply `json:"reply,omitempty"`
	Error *agentapi.Error `json:"error,omitempty"`
}

// ReleaseParams are term.release's params.
type ReleaseParams struct {
	Conn uint64 `json:"conn"`
}

// PeersParams are term.peers' params: the whole list each time.
type PeersParams struct {
	Peers []agentapi.Peer `json:"peers"`
}
