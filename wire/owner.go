package wire

// The owner's console: the requests an owner surface (the extension,
// through nativehost) may send the broker, the event the broker sends it
// back, and the client method that asks it to show the console
// (PROTOCOL.md, "The owner's console").
const (
	// CapOwnerConsole: a provider that lists it in its hello shows the
	// owner's console; only then is it sent OwnerChanged events and
	// ConsoleOpen requests.
	CapOwnerConsole = "owner.console.v1"

	// OwnerState (provider → broker, {}): the broker's mode, every client
	// with its grants, the activity log's and the journal's state.
	OwnerState = "owner.state"
	// OwnerStop (provider → broker, {conn?}): end one client's grants, or
	// every client's without conn.
	OwnerStop = "owner.stop"
	// OwnerLog (provider → broker, a query): entries of the activity log.
	OwnerLog = "owner.log"
	// OwnerChanged (broker → provider event, {topics}): what changed —
	// "clients", "grants", "log" — so the console asks again.
	OwnerChanged = "owner.changed"
	// ConsoleOpen (broker → provider, {}): open or focus the console.
	ConsoleOpen = "console.open"
	// BrokerConsole (client → broker, {}): ask the owner's browser to show
	// the console; {opened:false} when none is connected.
	BrokerConsole = "broker.console"
)
