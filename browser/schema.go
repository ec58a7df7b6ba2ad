package browser

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The params types carry their bounds in struct tags, so that each limit
// is written once, beside the field it bounds, and the published schema is
// generated from them:
//
//	len:"MIN,MAX"      string length in characters (either side may be empty)
//	range:"MIN,MAX"    integer bounds
//	items:"MIN,MAX"    array length
//	enum:"a,b,c"       allowed strings
//	const:"v"          the one allowed string (a shape's kind)
//	pattern:"RE"       a regular expression the string must match
//	text:"nonblank"    the string holds a character that is not white space
//	text:"character"   the string is no control character and no white space
//	                   (with len:"1,1": one character a chord may press)
//
// A type with several shapes (an Action: one per kind, see shapes.go) is
// published as oneOf its shapes.
//
// The runtime still checks what a schema cannot say (UTF-16 lengths, which
// fields go with which action kind); the schema is the boundary's first,
// declarative check and the published contract of each method.

// ParamsTypes maps each client method to the zero value of its params type.
var ParamsTypes = map[string]any{
	MethodAct:            ActParams{},
	MethodBatch:          BatchParams{},
	MethodCapture:        LeaseParams{},
	MethodClaim:          ClaimParams{},
	MethodFrames:         LeaseParams{},
	MethodInstances:      InstancesParams{},
	MethodObserve:        ObserveParams{},
	MethodReadPage:       ReadPageParams{},
	MethodRelease:        ReleaseParams{},
	MethodReleaseSession: SessionParams{},
	MethodTabs:           TabsParams{},
	MethodValidateLease:  LeaseParams{},
}

// ParamsSchema returns the JSON Schema (draft 2020-12) of a params value's
// type: the type's shape (unknown properties refused, no nulls) with the
// bounds of its tags.
func ParamsSchema(params any) json.RawMessage {
	data, err := json.Marshal(schemaOf(reflect.TypeOf(params)))
	if err != nil {
		panic(fmt.Sprintf("browser: schema of %T: %v", params, err))
	}
	return data
}

// schemaOf infers the schema of t and applies its tags.
func schemaOf(t reflect.Type) *jsonschema.Schema {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("browser: schema of %v: %v", t, err))
	}
	bound(t, s)
	return s
}

// bound applies the tags of struct type t to its schema s, recursively, and
// turns the nullable types of pointer fields into their plain type (the
// broker never takes null). A type with shapes becomes oneOf them.
func bound(t reflect.Type, s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			bound(t.Elem(), s.Items)
			return
		}
		t = t.Elem()
	}
	if v, ok := reflect.Zero(t).Interface().(variants); ok {
		*s = jsonschema.Schema{}
		for _, shape := range v.variants() {
			s.OneOf = append(s.OneOf, schemaOf(reflect.TypeOf(shape)))
		}
		return
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		p, ok := s.Properties[name]
		if !ok {
			continue
		}
		if lo, hi, ok := pair(f.Tag.Get("len")); ok {
			p.MinLength, p.MaxLength = lo, hi
		}
		if lo, hi, ok := pair(f.Tag.Get("range")); ok {
			p.Minimum, p.Maximum = float(lo), float(hi)
		}
		if lo, hi, ok := pair(f.Tag.Get("items")); ok {
			p.MinItems, p.MaxItems = lo, hi
		}
		if e := f.Tag.Get("enum"); e != "" {
			for _, v := range strings.Split(e, ",") {
				p.Enum = append(p.Enum, v)
			}
		}
		if c, ok := f.Tag.Lookup("const"); ok {
			var v any = c
			p.Const = &v
		}
		if re := f.Tag.Get("pattern"); re != "" {
			p.Pattern = re
		}
		switch f.Tag.Get("text") {
		case "nonblank":
			p.Pattern = nonblankPattern
		case "character":
			p.Pattern = characterPattern
		}
		bound(f.Type, p)
	}
	if pt, ok := reflect.Zero(t).Interface().(patcher); ok {
		pt.patch(s)
	}
}

// nonblankPattern matches a string with a character that is not white
// space (unicode.IsSpace), written out as literal characters: Go's and
// JavaScript's \s differ.
var nonblankPattern = "[^" + spaces + "]"

// characterPattern matches a string with a character that is neither a
// control character (unicode.IsControl) nor white space: with one
// character, a key a chord may press ([KeyCharacter]).
var characterPattern = "^[^" + controls + spaces + "]+$"

// controls are the characters unicode.IsControl reports, as two ranges.
const controls = "\u0000-\u001f\u007f-\u009f"

// spaces are the characters unicode.IsSpace reports (a "-" range among them).
const spaces = "\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

// Blank reports whether s holds nothing but white space (unicode.IsSpace).
func Blank(s string) bool { return strings.TrimSpace(s) == "" }

// pair parses "MIN,MAX" (either side may be empty).
func pair(tag string) (lo, hi *int, ok bool) {
	if tag == "" {
		return nil, nil, false
	}
	a, b, _ := strings.Cut(tag, ",")
	num := func(s string) *int {
		if s == "" {
			return nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			panic("browser: bad bound tag " + strconv.Quote(tag))
		}
		return &n
	}
	return num(a), num(b), true
}

func float(n *int) *float64 {
	if n == nil {
		return nil
	}
	f := float64(*n)
	return &f
}
