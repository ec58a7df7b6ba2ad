package mcpserver

import (
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-browser/broker/browser"
)

// actionKinds are the action kinds browser_act offers.
var actionKinds = []string{"click", "fill", "type", "append", "press", "check", "select", "scroll", "wheel", "navigate",
	"dblclick", "hover", "chord", "drag", "clickAt"}

// expectationKinds are the kinds of action.expected.
var expectationKinds = []string{"text", "value", "url", "state"}

// keyPattern accepts a named key or one character (a chord's key).
var keyPattern = "^(" + strings.Join(browser.NamedKeyList, "|") + "|.)$"

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
// its own, with the broker's enums and bounds. Which fields go with which
// kind is said in the descriptions (and checked by checkAction): one shape
// per kind reads worse to a model than one object.
func annotateAction(a *jsonschema.Schema) {
	a.Required = []string{"kind"}
	kind := prop(a, "kind")
	kind.Enum = enum(actionKinds)
	kind.Description = "click; fill: replace a field's value with text; type: insert text at the caret; append: add text at the end of a field's value; " +
		"press: press key; check: set a checkbox or switch to checked (or choose a radio button, checked:true); select: choose the option of a drop-down (select) labelled option, or whose value is value; " +
		"scroll: scroll the page (no ref) or exactly the element ref by deltaX/deltaY; wheel: one mouse-wheel turn over the element ref; navigate: go to url; " +
		"dblclick: double-click (to edit an item, open a file); hover: move the mouse over the element (menus, tooltips); " +
		"chord: a key with modifiers held, or one character as a key press (shortcuts: key \"f\" with modifiers [\"Control\"]); " +
		"drag: press on ref, move onto toRef (or by deltaX/deltaY) and release; clickAt: click the point x, y of the element (a canvas, a chart, an SVG, a map)"
	ref := prop(a, "ref")
	ref.Description = "the element's ref, from the latest browser_observe (e.g. r0123456789abcdef); every kind but navigate needs one (scroll: omit it to scroll the page)"
	ref.MinLength, ref.MaxLength = ptr(1), ptr(128)
	t := prop(a, "text")
	t.Description = "fill, type and append: the text (up to 10000 characters); a single-line field takes no line break"
	t.MaxLength = ptr(browser.MaxActionText)
	key := prop(a, "key")
	key.Pattern = keyPattern
	key.Description = "press: a named key (" + strings.Join(browser.NamedKeyList, ", ") + "); chord: a named key, or exactly one character such as \"s\", \"/\" or \"?\""
	prop(a, "shift").Description = "press: hold Shift"
	mods := prop(a, "modifiers")
	mods.Description = "chord: the modifier keys to hold, e.g. [\"Control\"] or [\"Control\", \"Shift\"]; [] for a plain character. " +
		"Shortcuts of the browser itself (Control+W, Control+T, Control+N, Control+Q, Control+L, Control+Tab, and with Meta) are refused POLICY_DENIED"
	mods.UniqueItems, mods.MaxItems = true, ptr(len(browser.Modifiers))
	mods.Items.Enum = enum(browser.Modifiers)
	to := prop(a, "toRef")
	to.Description = "drag: the ref of the element to drop on, from the same observation (both must be in view together)"
	to.MinLength, to.MaxLength = ptr(1), ptr(128)
	for _, c := range []string{"x", "y"} {
		p := prop(a, c)
		p.Description = "clickAt: CSS pixels from the element's top-left corner (" + c + " < its width/height, as the outline or a screenshot shows it)"
		p.Minimum, p.Maximum = ptr(0.0), ptr(float64(browser.MaxPointOffset))
	}
	v := prop(a, "value")
	v.Description = "select: the value attribute of the option to choose (instead of option, its label)"
	v.MaxLength = ptr(browser.MaxOptionValue)
	prop(a, "checked").Description = "check: true to check (choose, for a radio button), false to uncheck"
	for _, d := range []string{"deltaX", "deltaY"} {
		p := prop(a, d)
		p.Description = "scroll, wheel and drag: CSS pixels, positive to the right (deltaX) or down (deltaY); not both 0"
		p.Minimum, p.Maximum = ptr(float64(-browser.MaxScrollDelta)), ptr(float64(browser.MaxScrollDelta))
	}
	u := prop(a, "url")
	u.Description = "navigate: an http or https URL"
	u.MinLength, u.MaxLength = ptr(1), ptr(browser.MaxURL)
	o := prop(a, "option")
	o.Description = "select: the exact label of the option to choose, as the outline shows it"
	o.MinLength, o.MaxLength = ptr(1), ptr(browser.MaxOptionLabel)
	exp := prop(a, "expected")
	exp.Description = "optional check of the result: {text} text that is on the page once the action has worked; {value} the field's value afterwards; " +
		"{url} the tab's URL afterwards; {ref, state} an element of this page is then attached, detached, visible, hidden, enabled, disabled, checked or unchecked. " +
		"The result says succeeded only when it holds before the deadline"
	ek := prop(exp, "kind")
	ek.Enum, ek.Description = enum(expectationKinds), "text, value, url or state; may be left out: it follows from the field given"
	exp.Required = nil
	et := prop(exp, "text")
	et.Description = "text: the text to wait for (whitespace-insensitive substring of the page's text)"
	et.MinLength, et.MaxLength = ptr(1), ptr(browser.MaxExpectedText)
	ev := prop(exp, "value")
	ev.Description = "value: the exact value the target field holds afterwards (not for check, scroll, wheel, navigate; never of a password)"
	ev.MaxLength = ptr(browser.MaxActionText)
	eu := prop(exp, "url")
	eu.Description = "url: the exact URL the tab shows afterwards"
	eu.MinLength, eu.MaxLength = ptr(1), ptr(browser.MaxURL)
	er := prop(exp, "ref")
	er.Description = "state: the ref of the element to watch, from the same observation (not with navigate)"
	er.MinLength, er.MaxLength = ptr(1), ptr(128)
	es := prop(exp, "state")
	es.Enum, es.Description = enum(browser.ElementStates), "state: what the element must be afterwards"
}

func annotateObserve(s *jsonschema.Schema) {
	r := prop(s, "rootRef")
	r.MinLength, r.MaxLength = ptr(1), ptr(128)
	q := prop(s, "query")
	n := prop(q, "name")
	n.Description = "the exact accessible name, as the outline shows it in quotes (case-sensitive)"
	n.MinLength, n.MaxLength = ptr(1), ptr(browser.MaxNameLength)
	prop(q, "role").Description = "optional role, e.g. button, link, textbox, checkbox"
}

func annotateTimeout(t *jsonschema.Schema, max int) {
	t.Minimum, t.Maximum = ptr(1.0), ptr(float64(max))
}

func annotateNavigate(s *jsonschema.Schema) {
	u := prop(s, "url")
	u.MinLength, u.MaxLength = ptr(1), ptr(browser.MaxURL)
	annotateTimeout(prop(s, "timeoutMs"), int(browser.MaxActionTimeout.Milliseconds()))
	prop(s, "requestId").MaxLength = ptr(128)
	t := prop(s, "expectedText")
	t.MinLength, t.MaxLength = ptr(1), ptr(browser.MaxExpectedText)
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
