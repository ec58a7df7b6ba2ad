package browser

import "github.com/google/jsonschema-go/jsonschema"

// The published schema says which fields go with which action kind, and
// which expectations with which action: an Action is one of these shapes
// (told apart by kind), and each shape's expected one of the expectation
// shapes its kind allows. [ParseAct] checks the same in Go.

// variants is implemented by a type whose schema is one of several shapes.
type variants interface{ variants() []any }

// patcher is implemented by a shape with a rule its fields' tags cannot say.
type patcher interface{ patch(s *jsonschema.Schema) }

func (Action) variants() []any {
	return []any{checkShape{}, clickShape{}, fillShape{}, typeShape{}, appendShape{}, pressShape{},
		scrollShape{}, wheelShape{}, navigateShape{}, selectShape{}, selectValueShape{},
		dblclickShape{}, hoverShape{}, chordNamedShape{}, chordCharShape{}, dragToShape{}, dragByShape{}, clickAtShape{}}
}

// Which expectations an action kind allows: value never with check,
// scroll or wheel (nothing to read a value from); state never with
// navigate (the bound node does not survive the document).
type (
	anyExpected     struct{}
	noValueExpected struct{}
	urlOrText       struct{}
)

func (anyExpected) variants() []any {
	return []any{valueShape{}, urlShape{}, textShape{}, stateShape{}}
}
func (noValueExpected) variants() []any { return []any{urlShape{}, textShape{}, stateShape{}} }
func (urlOrText) variants() []any       { return []any{urlShape{}, textShape{}} }

type (
	checkShape struct {
		Kind     string           `json:"kind" const:"check"`
		Ref      string           `json:"ref" len:"1,128"`
		Checked  bool             `json:"checked"`
		Expected *noValueExpected `json:"expected,omitempty"`
	}
	clickShape struct {
		Kind     string       `json:"kind" const:"click"`
		Ref      string       `json:"ref" len:"1,128"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	fillShape struct {
		Kind     string       `json:"kind" const:"fill"`
		Ref      string       `json:"ref" len:"1,128"`
		Text     string       `json:"text" len:",10000"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	typeShape struct {
		Kind     string       `json:"kind" const:"type"`
		Ref      string       `json:"ref" len:"1,128"`
		Text     string       `json:"text" len:",10000"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	appendShape struct {
		Kind     string       `json:"kind" const:"append"`
		Ref      string       `json:"ref" len:"1,128"`
		Text     string       `json:"text" len:",10000"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	pressShape struct {
		Kind     string       `json:"kind" const:"press"`
		Ref      string       `json:"ref" len:"1,128"`
		Key      string       `json:"key"`
		Shift    *bool        `json:"shift,omitempty"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	scrollShape struct {
		Kind     string           `json:"kind" const:"scroll"`
		Ref      string           `json:"ref,omitempty" len:"1,128"`
		DeltaX   int              `json:"deltaX" range:"-10000,10000"`
		DeltaY   int              `json:"deltaY" range:"-10000,10000"`
		Expected *noValueExpected `json:"expected,omitempty"`
	}
	wheelShape struct {
		Kind     string           `json:"kind" const:"wheel"`
		Ref      string           `json:"ref" len:"1,128"`
		DeltaX   int              `json:"deltaX" range:"-10000,10000"`
		DeltaY   int              `json:"deltaY" range:"-10000,10000"`
		Expected *noValueExpected `json:"expected,omitempty"`
	}
	navigateShape struct {
		Kind     string     `json:"kind" const:"navigate"`
		URL      string     `json:"url" len:"1,8192"`
		Expected *urlOrText `json:"expected,omitempty"`
	}
	selectShape struct {
		Kind     string       `json:"kind" const:"select"`
		Ref      string       `json:"ref" len:"1,128"`
		Option   string       `json:"option" len:"1,1000"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	selectValueShape struct {
		Kind     string       `json:"kind" const:"select"`
		Ref      string       `json:"ref" len:"1,128"`
		Value    string       `json:"value" len:",1000"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	dblclickShape struct {
		Kind     string       `json:"kind" const:"dblclick"`
		Ref      string       `json:"ref" len:"1,128"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	hoverShape struct {
		Kind     string       `json:"kind" const:"hover"`
		Ref      string       `json:"ref" len:"1,128"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	// A chord is a named key with at least one modifier, or one character
	// with any.
	chordNamedShape struct {
		Kind      string       `json:"kind" const:"chord"`
		Ref       string       `json:"ref" len:"1,128"`
		Key       string       `json:"key"`
		Modifiers []string     `json:"modifiers" items:"1,4"`
		Expected  *anyExpected `json:"expected,omitempty"`
	}
	chordCharShape struct {
		Kind      string       `json:"kind" const:"chord"`
		Ref       string       `json:"ref" len:"1,128"`
		Key       string       `json:"key" len:"1,1" text:"character"`
		Modifiers []string     `json:"modifiers" items:"0,4"`
		Expected  *anyExpected `json:"expected,omitempty"`
	}
	dragToShape struct {
		Kind     string       `json:"kind" const:"drag"`
		Ref      string       `json:"ref" len:"1,128"`
		ToRef    string       `json:"toRef" len:"1,128"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	dragByShape struct {
		Kind     string       `json:"kind" const:"drag"`
		Ref      string       `json:"ref" len:"1,128"`
		DeltaX   int          `json:"deltaX" range:"-10000,10000"`
		DeltaY   int          `json:"deltaY" range:"-10000,10000"`
		Expected *anyExpected `json:"expected,omitempty"`
	}
	clickAtShape struct {
		Kind     string       `json:"kind" const:"clickAt"`
		Ref      string       `json:"ref" len:"1,128"`
		X        int          `json:"x" range:"0,10000"`
		Y        int          `json:"y" range:"0,10000"`
		Expected *anyExpected `json:"expected,omitempty"`
	}

	valueShape struct {
		Kind  string `json:"kind" const:"value"`
		Value string `json:"value" len:",10000"`
	}
	urlShape struct {
		Kind string `json:"kind" const:"url"`
		URL  string `json:"url" len:"1,8192"`
	}
	textShape struct {
		Kind string `json:"kind" const:"text"`
		Text string `json:"text" len:"1,2000" text:"nonblank"`
	}
	stateShape struct {
		Kind  string `json:"kind" const:"state"`
		Ref   string `json:"ref" len:"1,128"`
		State string `json:"state" enum:"attached,detached,visible,hidden,enabled,disabled,checked,unchecked"`
	}
)

// Scroll, wheel and drag deltas may not both be 0.
func (scrollShape) patch(s *jsonschema.Schema) { notBothZero(s) }
func (wheelShape) patch(s *jsonschema.Schema)  { notBothZero(s) }
func (dragByShape) patch(s *jsonschema.Schema) { notBothZero(s) }

// press's key is a named key; a chord's is a named key or a character,
// and its modifiers are each a modifier, at most once.
func (pressShape) patch(s *jsonschema.Schema)      { namedKey(s) }
func (chordNamedShape) patch(s *jsonschema.Schema) { namedKey(s); modifierItems(s) }
func (chordCharShape) patch(s *jsonschema.Schema)  { modifierItems(s) }

func namedKey(s *jsonschema.Schema) {
	k := s.Properties["key"]
	k.Enum = nil
	for _, v := range NamedKeyList {
		k.Enum = append(k.Enum, v)
	}
}

func modifierItems(s *jsonschema.Schema) {
	m := s.Properties["modifiers"]
	m.UniqueItems = true
	m.Items.Enum = nil
	for _, v := range Modifiers {
		m.Items.Enum = append(m.Items.Enum, v)
	}
}

func notBothZero(s *jsonschema.Schema) {
	var zero any = 0
	s.Not = &jsonschema.Schema{
		Properties: map[string]*jsonschema.Schema{"deltaX": {Const: &zero}, "deltaY": {Const: &zero}},
		Required:   []string{"deltaX", "deltaY"},
	}
}
