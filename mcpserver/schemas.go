package mcpserver

import (
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-browser/broker/browser"
)

// actionKinds are the action kinds the broker performs.
var actionKinds = []string{"click", "fill", "type", "append", "press"}

// namedKeys are browser.NamedKeys in the order a person lists them.
var namedKeys = []string{
	"Enter", "Tab", "Escape", "Space", "Backspace", "Delete",
	"ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End", "PageUp", "PageDown",
}

// inputSchema infers the schema of T, makes optional pointer fields plain
// optional properties (the broker never takes null), and applies patch.
func inputSchema[T any](patch func(*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err))
	}
	dropNull(s)
	if patch != nil {
		patch(s)
	}
	return s
}

// dropNull turns the {"type":["null",X]} of pointer fields into X, through
// the whole schema.
func dropNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		dropNull(p)
	}
	dropNull(s.Items)
}

func ptr[T any](v T) *T { return &v }

// prop returns the property name of an object schema, or panics: the
// annotations below must track the protocol types.
func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties[name]
	if !ok {
		panic("mcpserver: schema has no property " + name)
	}
	return p
}

func enum(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

// annotateAction describes browser.Action, which carries no schema tags of
// its own, with the broker's enums and bounds.
func annotateAction(a *jsonschema.Schema) {
	a.Required = []string{"kind", "ref"}
	for _, field := range []string{"checked", "deltaX", "deltaY", "url", "option"} {
		delete(a.Properties, field) // kinds this tool does not offer yet
	}
	kind := prop(a, "kind")
	kind.Enum = enum(actionKinds)
	kind.Description = "click; fill: replace the field's value with text; type: insert text at the caret; append: add text at the end of the field's value; press: press key"
	ref := prop(a, "ref")
	ref.Description = "the element's ref, from the latest browser_observe (e.g. r0123456789abcdef)"
	ref.MinLength, ref.MaxLength = ptr(1), ptr(128)
	t := prop(a, "text")
	t.Description = "fill, type and append: the text (up to 10000 characters); not for click or press"
	t.MaxLength = ptr(browser.MaxActionText)
	key := prop(a, "key")
	key.Enum = enum(namedKeys)
	key.Description = "press: the named key"
	prop(a, "shift").Description = "press: hold Shift"
	exp := prop(a, "expected")
	exp.Description = "optional check: text that is on the page once the action has worked; the result says succeeded only when it appears before the deadline"
	ek := prop(exp, "kind")
	ek.Enum, ek.Default, ek.Description = enum([]string{"text"}), []byte(`"text"`), `always "text"`
	exp.Required = slices.DeleteFunc(exp.Required, func(s string) bool { return s == "kind" })
	for _, field := range []string{"value", "url", "ref", "state"} {
		delete(exp.Properties, field)
	}
	et := prop(exp, "text")
	et.Description = "the text to wait for (whitespace-insensitive substring of the page's text)"
	et.MinLength, et.MaxLength = ptr(1), ptr(browser.MaxExpectedText)
}

func annotateObserve(s *jsonschema.Schema) {
	q := prop(s, "query")
	n := prop(q, "name")
	n.Description = "the exact accessible name, as the outline shows it in quotes (case-sensitive)"
	n.MinLength, n.MaxLength = ptr(1), ptr(browser.MaxNameLength)
	prop(q, "role").Description = "optional role, e.g. button, link, textbox, checkbox"
}

func annotateTimeout(t *jsonschema.Schema, max int) {
	t.Minimum, t.Maximum = ptr(1.0), ptr(float64(max))
}

func annotateAct(s *jsonschema.Schema) {
	annotateAction(prop(s, "action"))
	annotateTimeout(prop(s, "timeoutMs"), int(browser.MaxActionTimeout.Milliseconds()))
	prop(s, "requestId").MaxLength = ptr(128)
}

func annotateBatch(s *jsonschema.Schema) {
	steps := prop(s, "steps")
	steps.MinItems, steps.MaxItems = ptr(1), ptr(browser.MaxBatchSteps)
	step := steps.Items
	annotateAction(prop(step, "action"))
	st := prop(step, "timeoutMs")
	st.Description = "this step's own deadline in milliseconds, within the batch's"
	annotateTimeout(st, int(browser.MaxActionTimeout.Milliseconds()))
	annotateTimeout(prop(s, "timeoutMs"), int(browser.MaxBatchTimeout.Milliseconds()))
	prop(s, "requestId").MaxLength = ptr(128)
}
