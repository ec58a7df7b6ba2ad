// Package appchat is the app chat surface's reasoning (Snug Part IV §19):
// the eight intents and the one map from intent to lane, the prompts each
// lane sends the user's agent, the parsers of its replies, and the bounds
// on what re-enters the model's context. It holds no storage and calls no
// agent: the hub runs the lanes (package snug/hub) with these parts.
//
// # Routing
//
// Every message the user types beside an app is classified first
// ([ClassifierTurn], [ParseClassification]) into one of the eight
// [Intents]; [LaneOf] gives its lane. A classification that cannot be
// used — not JSON, an intent that is not one of the eight, a confidence
// missing or below [MinConfidence] — gets the [Clarify] reply and no lane:
// never a default one, least of all the lane that writes code.
//
// # Untrusted data
//
// Stored data, query results, the app's code and schema and earlier
// answers are data, never instructions: every prompt carries them inside
// [Untrusted] blocks, and the user's message inside [UserMessage], with
// every spelling of either delimiter in the text defanged ([Defang]).
package appchat

// Intent is what a chat message asks for.
type Intent string

// The eight intents (§19).
const (
	DataRead      Intent = "data_read"
	DataWrite     Intent = "data_write"
	SchemaChange  Intent = "schema_change"
	AppChange     Intent = "app_change"
	ProviderRead  Intent = "provider_read"
	ProviderWrite Intent = "provider_write"
	AppQuestion   Intent = "app_question"
	Other         Intent = "other"
)

// Intents lists every intent, in the spec's order.
var Intents = [...]Intent{DataRead, DataWrite, SchemaChange, AppChange, ProviderRead, ProviderWrite, AppQuestion, Other}

// Lane is the part of the host that handles an intent.
type Lane string

// The lanes. Clarify is not one: it is the router's failure posture.
const (
	// LaneData reads the app's data on a throwaway copy, and proposes
	// writes that run only on the user's approval.
	LaneData Lane = "data"
	// LaneFeature writes a new app version on the model's authority (no
	// confirm; the wall is versioning and revert).
	LaneFeature Lane = "feature"
	// LaneProvider composes requests under an app's approved connections
	// (§16).
	LaneProvider Lane = "provider"
	// LaneAnswer answers in words and changes nothing.
	LaneAnswer Lane = "answer"
)

// lanes is the one map from intent to lane. Every intent has its entry
// (a test fails otherwise); nothing falls through to a default.
var lanes = map[Intent]Lane{
	DataRead:      LaneData,
	DataWrite:     LaneData,
	SchemaChange:  LaneFeature,
	AppChange:     LaneFeature,
	ProviderRead:  LaneProvider,
	ProviderWrite: LaneProvider,
	AppQuestion:   LaneAnswer,
	Other:         LaneAnswer,
}

// LaneOf returns the lane of an intent; ok is false for anything that is
// not one of the eight.
func LaneOf(i Intent) (lane Lane, ok bool) {
	lane, ok = lanes[i]
	return lane, ok
}

// MinConfidence is the lowest classifier confidence that routes (a host
// choice; the reference names MIN_ROUTING_CONFIDENCE): below it the
// message gets the clarifying reply.
const MinConfidence = 0.6

// MaxClarifyChars bounds the clarifying reply.
const MaxClarifyChars = 300

// Clarify is the reply to a message whose classification is unusable.
const Clarify = "I could not tell what you want me to do. Do you want to look something up in this app's data, change its data, change how the app works, or ask about the app? Say it in other words and I will try again."
