// Package jsonmut makes deterministic mutations of JSON documents for
// conformance tests: a parser and a validator are run over the same
// mutations and must agree. Mutations keep member order and number text, so
// a mutation's text is fixed by its seed and never by the Go release.
package jsonmut

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// A tree is a decoded JSON value that keeps member order and number text:
// nil, bool, Number, string, *Array or *Object.
type (
	Number string
	Array  struct{ Items []any }
	Object struct {
		Keys []string
		Vals []any
	}
)

// Parse decodes text into a tree.
func Parse(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := parseTree(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("jsonmut: trailing data")
	}
	return v, nil
}

// MustParse is Parse for known-good text.
func MustParse(text string) any {
	v, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return v
}

func parseTree(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '[':
			a := &Array{}
			for dec.More() {
				v, err := parseTree(dec)
				if err != nil {
					return nil, err
				}
				a.Items = append(a.Items, v)
			}
			_, err := dec.Token()
			return a, err
		case '{':
			o := &Object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseTree(dec)
				if err != nil {
					return nil, err
				}
				o.Keys = append(o.Keys, k.(string))
				o.Vals = append(o.Vals, v)
			}
			_, err := dec.Token()
			return o, err
		}
	case json.Number:
		return Number(tok), nil
	case string, bool, nil:
		return tok, nil
	}
	return nil, errors.New("jsonmut: unexpected token")
}

// Clone returns a deep copy of a tree.
func Clone(v any) any {
	switch v := v.(type) {
	case *Array:
		a := &Array{Items: make([]any, len(v.Items))}
		for i, x := range v.Items {
			a.Items[i] = Clone(x)
		}
		return a
	case *Object:
		o := &Object{Keys: append([]string(nil), v.Keys...), Vals: make([]any, len(v.Vals))}
		for i, x := range v.Vals {
			o.Vals[i] = Clone(x)
		}
		return o
	}
	return v
}

// Encode returns the JSON text of a tree, without HTML escaping.
func Encode(v any) string {
	var b strings.Builder
	write(&b, v)
	return b.String()
}

func write(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		fmt.Fprint(b, v)
	case Number:
		b.WriteString(string(v))
	case string:
		b.WriteString(Quote(v))
	case *Array:
		b.WriteByte('[')
		for i, x := range v.Items {
			if i > 0 {
				b.WriteByte(',')
			}
			write(b, x)
		}
		b.WriteByte(']')
	case *Object:
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(Quote(k))
			b.WriteByte(':')
			write(b, v.Vals[i])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("jsonmut: %T in a tree", v))
	}
}

// Quote returns s as a JSON string literal, without HTML escaping.
func Quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Vocabulary is what a Mutator draws from besides its generic samples.
type Vocabulary struct {
	// Keys are member names to add: unknown ones, and ones that belong
	// elsewhere in the grammar.
	Keys []string
	// Enums are values to try for the members with these names.
	Enums map[string][]any
	// Strings are string values worth trying anywhere (limits, near-misses).
	Strings []string
	// Numbers are number texts worth trying (boundaries, exact-integer traps).
	Numbers []string
}

// Mutator makes deterministic mutations. It draws only raw 64-bit outputs
// from PCG, whose sequence is fixed by its algorithm.
type Mutator struct {
	rng   *rand.PCG
	vocab Vocabulary
}

// New returns a Mutator for seed.
func New(seed uint64, vocab Vocabulary) *Mutator {
	return &Mutator{rng: rand.NewPCG(seed, 0x5eed), vocab: vocab}
}

// Intn returns a deterministic number in [0, n).
func (m *Mutator) Intn(n int) int { return int(m.rng.Uint64() % uint64(n)) }

func pick[T any](m *Mutator, xs []T) T { return xs[m.Intn(len(xs))] }

// sample returns a value of some JSON type.
func (m *Mutator) sample() any {
	switch m.Intn(14) {
	case 0:
		return nil
	case 1:
		return true
	case 2:
		return false
	case 3, 4:
		if len(m.vocab.Numbers) > 0 {
			return Number(pick(m, m.vocab.Numbers))
		}
		return Number("1")
	case 5:
		return ""
	case 6:
		return "x"
	case 7, 8, 9:
		if len(m.vocab.Strings) > 0 {
			return pick(m, m.vocab.Strings)
		}
		return "y"
	case 10:
		return &Array{}
	case 11:
		return &Array{Items: []any{Number("1"), "a"}}
	case 12:
		return &Object{}
	default:
		return &Object{Keys: []string{"a"}, Vals: []any{Number("1")}}
	}
}

// perturb changes a string the way a broken or hostile peer might.
func (m *Mutator) perturb(s string) string {
	r := []rune(s)
	switch m.Intn(8) {
	case 0: // an odd character somewhere
		i := m.Intn(len(r) + 1)
		return string(r[:i]) + pick(m, []string{" ", "/", "é", "\u0000", "@", "#", ":", "\n", "😀", "\\", "\"", "%", "\u200b"}) + string(r[i:])
	case 1:
		return strings.ToUpper(s)
	case 2:
		return strings.ToLower(s)
	case 3: // grow by one character, or to a common limit
		n := pick(m, []int{len(r) + 1, 8, 9, 32, 33, 64, 65, 80, 81, 128, 129, 200, 201, 256, 257, 300, 301})
		if len(r) == 0 {
			r = []rune("a")
		}
		grow := pick(m, []string{"x", "é", "中", "😀"})
		for len(r) < n {
			r = append(r, []rune(grow)...)
		}
		return string(r[:n])
	case 4:
		return ""
	case 5: // truncate
		return string(r[:m.Intn(len(r)+1)])
	case 6: // a prefix
		return pick(m, []string{"x", " ", "http:", "https://u:p@", "snug:"}) + s
	default:
		return s + pick(m, []string{"\n", " ", "x", "/"})
	}
}

// slot is a place in a tree that holds a value.
type slot struct {
	key string // the member name, or the name of the member holding the array
	get func() any
	set func(any)
}

func collect(v any, parentKey string, slots *[]slot, objs *[]*Object, arrs *[]*Array) {
	switch v := v.(type) {
	case *Object:
		*objs = append(*objs, v)
		for i := range v.Keys {
			*slots = append(*slots, slot{key: v.Keys[i], get: func() any { return v.Vals[i] }, set: func(x any) { v.Vals[i] = x }})
			collect(v.Vals[i], v.Keys[i], slots, objs, arrs)
		}
	case *Array:
		*arrs = append(*arrs, v)
		for i := range v.Items {
			*slots = append(*slots, slot{key: parentKey, get: func() any { return v.Items[i] }, set: func(x any) { v.Items[i] = x }})
			collect(v.Items[i], parentKey, slots, objs, arrs)
		}
	}
}

// Mutate applies one mutation to tree and returns the result (tree itself,
// changed in place, or a new value).
func (m *Mutator) Mutate(tree any) any {
	var slots []slot
	var objs []*Object
	var arrs []*Array
	collect(tree, "", &slots, &objs, &arrs)
	if len(slots) == 0 {
		return m.sample()
	}
	switch m.Intn(11) {
	case 0: // delete a member
		if len(objs) == 0 {
			return tree
		}
		o := pick(m, objs)
		if len(o.Keys) == 0 {
			return tree
		}
		i := m.Intn(len(o.Keys))
		o.Keys = append(o.Keys[:i:i], o.Keys[i+1:]...)
		o.Vals = append(o.Vals[:i:i], o.Vals[i+1:]...)
	case 1: // add a member, unless it is there
		if len(m.vocab.Keys) == 0 || len(objs) == 0 {
			return tree
		}
		o := pick(m, objs)
		k := pick(m, m.vocab.Keys)
		for _, have := range o.Keys {
			if have == k {
				return tree
			}
		}
		o.Keys = append(o.Keys, k)
		o.Vals = append(o.Vals, m.sample())
	case 2, 3: // replace a value with one of any type
		pick(m, slots).set(m.sample())
	case 4, 5: // an enumerated member to another value
		var cands []slot
		for _, s := range slots {
			if _, ok := m.vocab.Enums[s.key]; ok {
				cands = append(cands, s)
			}
		}
		if len(cands) == 0 {
			return tree
		}
		s := pick(m, cands)
		s.set(pick(m, m.vocab.Enums[s.key]))
	case 6, 7: // perturb a string
		var cands []slot
		for _, s := range slots {
			if _, ok := s.get().(string); ok {
				cands = append(cands, s)
			}
		}
		if len(cands) == 0 {
			return tree
		}
		s := pick(m, cands)
		s.set(m.perturb(s.get().(string)))
	case 8: // a number to a boundary
		var cands []slot
		for _, s := range slots {
			if _, ok := s.get().(Number); ok {
				cands = append(cands, s)
			}
		}
		if len(cands) == 0 || len(m.vocab.Numbers) == 0 {
			return tree
		}
		pick(m, cands).set(Number(pick(m, m.vocab.Numbers)))
	case 9: // wrap or unwrap a value
		s := pick(m, slots)
		switch v := s.get().(type) {
		case *Object:
			s.set(&Array{Items: v.Vals})
		case *Array:
			if len(v.Items) > 0 {
				s.set(v.Items[0])
			} else {
				s.set(&Object{})
			}
		default:
			s.set(&Array{Items: []any{v}})
		}
	default: // mutate inside a nested value
		s := pick(m, slots)
		switch s.get().(type) {
		case *Object, *Array:
			s.set(m.Mutate(s.get()))
		default:
			s.set(m.sample())
		}
	}
	return tree
}
