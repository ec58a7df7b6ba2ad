package frame

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/dsh-browser/broker/snug/internal/jsonread"
)

// Hint is a host-initiated push (snug:host-event) that carries references,
// never content (R7): a doorbell, not a delivery. The app answers a hint
// with its own governed reads. Host-event frames carry no instanceId and an
// oversized one is dropped silently, so a stale or lost hint must cost at
// most a redundant refetch; content in a hint could inject state.
//
// A Hint can only be made by [NewHint], from values that cannot carry
// content: identifiers ([Ref]), integers ([Count]) and booleans ([Flag]).
// Whatever a hint forwards is rebuilt from these, field by field.
type Hint struct {
	event string
	data  map[string]HintValue
}

// HintValue is a [Ref], a [Count] or a [Flag].
type HintValue interface{ hintValue() }

// Ref is a reference: 1–128 characters of letters, digits and . _ : -,
// starting with a letter or digit (a theme name, a slot, a table name).
type Ref string

// Count is an integer within ±(2^53 − 1), exact in JavaScript.
type Count int64

// Flag is a boolean.
type Flag bool

func (Ref) hintValue()   {}
func (Count) hintValue() {}
func (Flag) hintValue()  {}

// MaxHintFields bounds a hint's data members.
const MaxHintFields = 16

var (
	eventPattern     = regexp.MustCompile(`^[a-z][a-z0-9-]*([.:][a-z][a-z0-9-]*)*$`)
	hintNamePattern  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)
	hintRefPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	errHintFieldsMax = fmt.Errorf("snug hint: more than %d data members", MaxHintFields)
)

// NewHint returns the hint event with data (nil for none). event is 1–64
// characters of lower-case words joined by -, and namespaced by . or :
// (theme-change, resize, connection-event).
func NewHint(event string, data map[string]HintValue) (Hint, error) {
	if len(event) > MaxEventChars || !eventPattern.MatchString(event) {
		return Hint{}, fmt.Errorf("snug hint: event %q is not a lower-case event name of at most %d characters", event, MaxEventChars)
	}
	if len(data) > MaxHintFields {
		return Hint{}, errHintFieldsMax
	}
	copied := make(map[string]HintValue, len(data))
	for name, v := range data {
		if !hintNamePattern.MatchString(name) {
			return Hint{}, fmt.Errorf("snug hint: member name %q is not an identifier", name)
		}
		switch v := v.(type) {
		case Ref:
			if !hintRefPattern.MatchString(string(v)) {
				return Hint{}, fmt.Errorf("snug hint: %s is not a reference (1–128 of A-Z a-z 0-9 . _ : -)", name)
			}
		case Count:
			if v > jsonread.MaxSafeInteger || v < -jsonread.MaxSafeInteger {
				return Hint{}, fmt.Errorf("snug hint: %s is beyond ±(2^53 − 1)", name)
			}
		case Flag:
		default:
			return Hint{}, errors.New("snug hint: " + name + " has no value")
		}
		copied[name] = v
	}
	return Hint{event: event, data: copied}, nil
}

// FrameType is snug:host-event.
func (Hint) FrameType() Type { return TypeHostEvent }

// Event is the hint's event name.
func (h Hint) Event() string { return h.event }

func hintJSON(h Hint) any {
	out := &struct {
		V     int            `json:"v"`
		Type  Type           `json:"type"`
		Event string         `json:"event"`
		Data  map[string]any `json:"data,omitempty"`
	}{V: ProtocolVersion, Type: TypeHostEvent, Event: h.event}
	if len(h.data) > 0 {
		out.Data = make(map[string]any, len(h.data))
		for k, v := range h.data {
			out.Data[k] = v
		}
	}
	return out
}
