package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/protocol"
	"github.com/dsh-browser/broker/wire"
)

var update = flag.Bool("update", false, "rewrite protocol/testdata/vectors.json")

// vectorsFile is read by the extension's JavaScript validator tests too.
const vectorsFile = "../protocol/testdata/vectors.json"

// How many distinct mutations of each kind the vector set holds.
const (
	envelopeMutations = 1200
	helloMutations    = 900
	welcomeMutations  = 400
	actMutations      = 700
	batchMutations    = 300
	observeMutations  = 200
)

// schemas compiles the published schema: its root for envelopes and its
// $defs for the handshake payloads.
var schemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(protocol.V1Schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(wire.SchemaID, doc); err != nil {
		return nil, err
	}
	out := map[string]*jsonschema.Schema{}
	for kind, ref := range map[string]string{
		kindEnvelope: wire.SchemaID,
		kindHello:    wire.SchemaID + "#/$defs/hello",
		kindWelcome:  wire.SchemaID + "#/$defs/welcome",
		kindAct:      wire.SchemaID + "#/$defs/" + kindAct,
		kindBatch:    wire.SchemaID + "#/$defs/" + kindBatch,
		kindObserve:  wire.SchemaID + "#/$defs/" + kindObserve,
	} {
		if out[kind], err = c.Compile(ref); err != nil {
			return nil, err
		}
	}
	return out, nil
})

func mustSchemas(tb testing.TB) map[string]*jsonschema.Schema {
	tb.Helper()
	s, err := schemas()
	if err != nil {
		tb.Fatalf("compiling protocol/v1.schema.json: %v", err)
	}
	return s
}

// schemaVerdict reports whether data is one JSON value that the published
// schema accepts as kind. Numbers stay json.Number, so integer checks are
// exact. isJSON is false when data is not JSON at all.
func schemaVerdict(tb testing.TB, kind string, data []byte) (valid, isJSON bool) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return false, false
	}
	return mustSchemas(tb)[kind].Validate(inst) == nil, true
}

// vector is one entry of vectors.json. Rule, when set, names the rule past
// the schema (browser.Rule*) that alone makes Go refuse params the schema
// accepts: a schema validator's verdict on that vector is true.
type vector struct {
	Kind  string `json:"kind"`
	JSON  string `json:"json"`
	Valid bool   `json:"valid"`
	Rule  string `json:"rule,omitempty"`
}

// ruleOf returns the rule past the schema that alone refused params, or "".
func ruleOf(err error) string {
	if pe, ok := errors.AsType[*browser.ParamsError](err); ok {
		return pe.Rule
	}
	return ""
}

// checkAgreement fails unless the Go validator and the published schema
// give the same verdict on data (and, for a golden case, the expected one).
// Params refused only by a rule past the schema must match the schema.
func checkAgreement(t *testing.T, kind string, data []byte) bool {
	t.Helper()
	goErr := parse(kind, data)
	schemaValid, isJSON := schemaVerdict(t, kind, data)
	if !isJSON {
		if goErr == nil {
			t.Errorf("Go accepts a %s that is not JSON:\n%q", kind, data)
			return false
		}
		return true
	}
	if rule := ruleOf(goErr); rule != "" {
		if !schemaValid {
			t.Errorf("Go refuses this %s only by rule %s, but the schema refuses it too\n%s", kind, rule, data)
			return false
		}
		return true
	}
	if (goErr == nil) != schemaValid {
		t.Errorf("verdicts differ on this %s: Go valid=%v (%v), schema valid=%v\n%s",
			kind, goErr == nil, goErr, schemaValid, data)
		return false
	}
	return true
}

// TestAgreement holds the Go validator to the published schema on every
// golden case and every mutation.
func TestAgreement(t *testing.T) {
	for _, g := range allGoldens() {
		if !checkAgreement(t, g.kind, []byte(g.json)) {
			t.Logf("golden case %s/%s", g.kind, g.name)
		}
	}
	counts := map[string][2]int{}
	for _, v := range mutations() {
		checkAgreement(t, v.Kind, []byte(v.JSON))
		c := counts[v.Kind]
		if parse(v.Kind, []byte(v.JSON)) == nil {
			c[0]++
		} else {
			c[1]++
		}
		counts[v.Kind] = c
	}
	for kind, c := range counts {
		t.Logf("%s mutations: %d valid, %d invalid", kind, c[0], c[1])
		// A mutation set that is all invalid would test little.
		if c[0] < (c[0]+c[1])/10 {
			t.Errorf("only %d of %d %s mutations are valid", c[0], c[0]+c[1], kind)
		}
	}
	if n := counts[kindEnvelope][0] + counts[kindEnvelope][1]; n < 1000 {
		t.Errorf("%d envelope mutations, want at least 1000", n)
	}
	if n := counts[kindHello][0] + counts[kindHello][1] + counts[kindWelcome][0] + counts[kindWelcome][1]; n < 1000 {
		t.Errorf("%d hello and welcome mutations, want at least 1000", n)
	}
	if n := counts[kindAct][0] + counts[kindAct][1] + counts[kindBatch][0] + counts[kindBatch][1]; n < 1000 {
		t.Errorf("%d action and batch mutations, want at least 1000", n)
	}
}

// TestVectors keeps protocol/testdata/vectors.json equal to the golden cases
// and mutations with their verdicts. Regenerate it with
//
//	go test ./wire -run TestVectors -update
func TestVectors(t *testing.T) {
	var vs []vector
	for _, g := range allGoldens() {
		if !g.goOnly {
			vs = append(vs, vector{Kind: g.kind, JSON: g.json, Valid: g.valid, Rule: ruleOf(parse(g.kind, []byte(g.json)))})
		}
	}
	vs = append(vs, mutations()...)
	for _, v := range vs {
		if !json.Valid([]byte(v.JSON)) {
			t.Fatalf("vector is not JSON: %q", v.JSON)
		}
		err := parse(v.Kind, []byte(v.JSON))
		if valid := err == nil; valid != v.Valid || ruleOf(err) != v.Rule {
			t.Fatalf("vector verdict %v (rule %q), Go says %v (%v): %s", v.Valid, v.Rule, valid, err, v.JSON)
		}
	}
	want := encodeVectors(t, vs)
	if len(want) > 2<<20 {
		t.Errorf("vectors.json would be %d bytes, want at most 2 MiB", len(want))
	}
	if *update {
		if err := os.WriteFile(vectorsFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d vectors (%d bytes) to %s", len(vs), len(want), vectorsFile)
		return
	}
	got, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("%v; run go test ./wire -run TestVectors -update", err)
	}
	if !bytes.Equal(got, want) {
		line := 1 + bytes.Count(want[:commonPrefix(got, want)], []byte("\n"))
		t.Fatalf("protocol/testdata/vectors.json is stale (first difference on line %d); "+
			"run go test ./wire -run TestVectors -update", line)
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// encodeVectors writes the vectors as a JSON array, one per line.
func encodeVectors(t *testing.T, vs []vector) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, v := range vs {
		var line bytes.Buffer
		enc := json.NewEncoder(&line)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		b.Write(bytes.TrimSuffix(line.Bytes(), []byte("\n")))
		if i < len(vs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// mutations returns the deterministic mutation vectors, with Go's verdicts.
var mutations = sync.OnceValue(func() []vector {
	seen := map[string]bool{}
	for _, g := range allGoldens() {
		seen[g.kind+"\x00"+g.json] = true
	}
	var out []vector
	gen := func(kind string, seed uint64, n int, bases ...string) {
		m := &mutator{rng: rand.NewPCG(seed, 0x5eed)}
		if kind == kindAct || kind == kindBatch || kind == kindObserve {
			m.tables = paramsTables
		}
		trees := make([]any, len(bases))
		for i, b := range bases {
			trees[i] = mustParseTree(b)
		}
		for made, tries := 0, 0; made < n; tries++ {
			if tries > 100*n {
				panic(fmt.Sprintf("only %d distinct %s mutations", made, kind))
			}
			tree := cloneTree(trees[m.intn(len(trees))])
			tree = m.mutate(tree)
			if m.intn(3) == 0 { // nest a second mutation
				tree = m.mutate(tree)
			}
			text := encodeTree(tree)
			if seen[kind+"\x00"+text] {
				continue
			}
			seen[kind+"\x00"+text] = true
			err := parse(kind, []byte(text))
			out = append(out, vector{Kind: kind, JSON: text, Valid: err == nil, Rule: ruleOf(err)})
			made++
		}
	}
	gen(kindEnvelope, 1, envelopeMutations,
		specRequest.String(), specSuccess.String(), specFailure.String(), specEvent.String(), specCancel.String(),
		specRequest.set("params", `{"tab":"instance:7","query":{"role":"button","limit":[1,2]}}`).String(),
		specEvent.set("event", `"lease.revoked"`).set("value", `"lease"`).String())
	gen(kindHello, 2, helloMutations,
		specClientHello, specProviderHello, clientHello.String(), providerHello.String(),
		providerHello.set("token", `"tok"`).String(), clientHello.del("journalKey").del("requiredCapabilities").String())
	gen(kindWelcome, 3, welcomeMutations, specWelcome, welcome.String(), welcome.set("capabilities", `[]`).String())
	gen(kindAct, 4, actMutations, actBases()...)
	gen(kindBatch, 5, batchMutations, batchBases()...)
	gen(kindObserve, 6, observeMutations, observeBases()...)
	return out
})

// A tree is a decoded JSON value that keeps member order and number text:
// nil, bool, number, string, *array or *object.
type (
	number string
	array  struct{ items []any }
	object struct {
		keys []string
		vals []any
	}
)

func mustParseTree(text string) any {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := parseTree(dec)
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
			a := &array{}
			for dec.More() {
				v, err := parseTree(dec)
				if err != nil {
					return nil, err
				}
				a.items = append(a.items, v)
			}
			_, err := dec.Token()
			return a, err
		case '{':
			o := &object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseTree(dec)
				if err != nil {
					return nil, err
				}
				o.keys = append(o.keys, k.(string))
				o.vals = append(o.vals, v)
			}
			_, err := dec.Token()
			return o, err
		}
	case json.Number:
		return number(tok), nil
	case string, bool, nil:
		return tok, nil
	}
	return nil, errors.New("unexpected token")
}

func cloneTree(v any) any {
	switch v := v.(type) {
	case *array:
		a := &array{items: make([]any, len(v.items))}
		for i, x := range v.items {
			a.items[i] = cloneTree(x)
		}
		return a
	case *object:
		o := &object{keys: append([]string(nil), v.keys...), vals: make([]any, len(v.vals))}
		for i, x := range v.vals {
			o.vals[i] = cloneTree(x)
		}
		return o
	}
	return v
}

func encodeTree(v any) string {
	var b strings.Builder
	writeTree(&b, v)
	return b.String()
}

func writeTree(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		fmt.Fprint(b, v)
	case number:
		b.WriteString(string(v))
	case string:
		b.WriteString(jstr(v))
	case *array:
		b.WriteByte('[')
		for i, x := range v.items {
			if i > 0 {
				b.WriteByte(',')
			}
			writeTree(b, x)
		}
		b.WriteByte(']')
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jstr(k))
			b.WriteByte(':')
			writeTree(b, v.vals[i])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("unexpected %T in tree", v))
	}
}

// slot is a place in a tree that holds a value: an object member or an
// array item. key is the member name, or the name of the member holding the
// array.
type slot struct {
	key string
	get func() any
	set func(any)
}

func collect(v any, parentKey string, slots *[]slot, objs *[]*object, arrs *[]*array) {
	switch v := v.(type) {
	case *object:
		*objs = append(*objs, v)
		for i := range v.keys {
			*slots = append(*slots, slot{key: v.keys[i], get: func() any { return v.vals[i] }, set: func(x any) { v.vals[i] = x }})
			collect(v.vals[i], v.keys[i], slots, objs, arrs)
		}
	case *array:
		*arrs = append(*arrs, v)
		for i := range v.items {
			*slots = append(*slots, slot{key: parentKey, get: func() any { return v.items[i] }, set: func(x any) { v.items[i] = x }})
			collect(v.items[i], parentKey, slots, objs, arrs)
		}
	}
}

// mutator makes deterministic mutations. It draws only raw 64-bit outputs
// from PCG, whose sequence is fixed by its algorithm, so vectors.json does
// not change with the Go release.
type mutator struct {
	rng    *rand.PCG
	tables *tables // nil: the envelope and handshake tables
}

// tables are the keys, enumerated values and numbers a mutator draws from.
type tables struct {
	extraKeys  []string
	enumValues map[string][]string
	numbers    []string
}

func (m *mutator) t() *tables {
	if m.tables == nil {
		return &wireTables
	}
	return m.tables
}

func (m *mutator) intn(n int) int { return int(m.rng.Uint64() % uint64(n)) }

func pick[T any](m *mutator, xs []T) T { return xs[m.intn(len(xs))] }

var wireTables = tables{extraKeys: extraKeys, enumValues: enumValues, numbers: boundaryNumbers}

var (
	extraKeys = []string{"extra", "kind", "protocol", "session", "epoch", "result", "error", "__proto__",
		"constructor", "toString", "Type", "ID", "",
		// keys that belong elsewhere in the grammar
		"type", "id", "method", "params", "ok", "value", "code", "event",
		"bootstrap", "versions", "role", "token", "journalKey", "requiredCapabilities", "capabilities",
		"instance", "version", "connectionEpoch", "family", "brand", "profileLabel"}
	enumValues = map[string][]string{
		"type":   {"request", "response", "event", "cancel", "hello", "REQUEST", ""},
		"role":   {"client", "provider", "broker", "Client", ""},
		"family": {"chromium", "chrome", "Chromium", "firefox"},
		"code":   {"STALE_TARGET", "INTERNAL_ERROR", "INSTALLATION_FAILED", "stale_target", "NOT_A_CODE", "constructor", ""},
	}
	boundaryNumbers = []string{"0", "1", "2", "8", "9", "64", "65", "128", "129", "256", "257", "65535", "65536",
		"-1", "1.0", "1e0", "1E0", "10e-1", "1.5", "0.5", "1e5", "65535.0", "65535.5", "9007199254740991", "1e300", "-0"}
	illegalChars = []string{" ", "/", "é", "\u0000", "$", "#", "+", "\n", "😀", "\\", "\"", "'", ",", "@", "ａ", "\u200b"}
)

// longString returns a string of n code points made of r.
func longString(r string, n int) string { return strings.Repeat(r, n) }

func (m *mutator) sample() any {
	switch m.intn(27) {
	case 0:
		return nil
	case 1:
		return true
	case 2:
		return false
	case 3:
		return number(pick(m, m.t().numbers))
	case 4:
		return number("1.5")
	case 5:
		return ""
	case 6:
		return "x"
	case 7:
		return "runtime.v1"
	case 8:
		return longString(pick(m, runeSets).r, 128)
	case 9:
		return longString(pick(m, runeSets).r, 129)
	case 10:
		return nameOf(128)
	case 11:
		return nameOf(129)
	case 12:
		return &array{}
	case 13:
		return &array{items: []any{number("1")}}
	case 14:
		return &array{items: []any{"runtime.v1", "observe.query.v1"}}
	case 15:
		return &object{}
	case 16:
		return &object{keys: []string{"a"}, vals: []any{number("1")}}
	case 17:
		return strings.Repeat("0123456789abcdef", 4)
	case 18:
		return strings.Repeat("0123456789ABCDEF", 4)
	case 19:
		return "STALE_TARGET"
	case 20:
		return "chromium"
	case 21:
		return "client"
	case 22:
		return "provider"
	case 23:
		return "request"
	case 24:
		return longString(pick(m, runeSets).r, 256)
	case 25:
		return longString(pick(m, runeSets).r, 257)
	default:
		return &array{items: []any{number("1"), number("2")}}
	}
}

// perturb changes a string the way a broken or hostile peer might.
func (m *mutator) perturb(s string) string {
	r := []rune(s)
	switch m.intn(9) {
	case 0: // illegal character somewhere
		i := m.intn(len(r) + 1)
		return string(r[:i]) + pick(m, illegalChars) + string(r[i:])
	case 1: // bad first character
		return pick(m, []string{"1", "_", ".", "-", ":", "9", "É"}) + s
	case 2: // replace the first character
		if len(r) == 0 {
			return "_"
		}
		return pick(m, []string{"1", "_", ".", "-", " "}) + string(r[1:])
	case 3:
		return strings.ToUpper(s)
	case 4:
		return strings.ToLower(s)
	case 5: // grow to a limit
		n := pick(m, []int{128, 129, 256, 257})
		if len(r) == 0 {
			r = []rune("a")
		}
		for len(r) < n {
			r = append(r, []rune(pick(m, runeSets).r)...)
		}
		return string(r[:n])
	case 6:
		return ""
	case 7: // truncate
		return string(r[:m.intn(len(r)+1)])
	default: // trailing newline, which some regexp engines let $ match before
		return s + "\n"
	}
}

// grow extends a to n items, unique unless a duplicate is asked for.
func (m *mutator) grow(a *array, n int) {
	numeric := len(a.items) > 0
	if numeric {
		_, numeric = a.items[0].(number)
	}
	for i := 0; len(a.items) < n; i++ {
		if numeric {
			a.items = append(a.items, number(fmt.Sprint(100+i)))
		} else {
			a.items = append(a.items, fmt.Sprintf("grown.n%02d.v1", i))
		}
	}
}

// mutate applies one mutation to tree and returns the result.
func (m *mutator) mutate(tree any) any {
	var slots []slot
	var objs []*object
	var arrs []*array
	collect(tree, "", &slots, &objs, &arrs)
	if len(slots) == 0 {
		return m.sample()
	}
	switch op := m.intn(12); op {
	case 0: // delete a key
		if len(objs) == 0 {
			return tree
		}
		o := pick(m, objs)
		if len(o.keys) == 0 {
			return tree
		}
		i := m.intn(len(o.keys))
		o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
		o.vals = append(o.vals[:i:i], o.vals[i+1:]...)
	case 1: // add a key, unless it is already there
		if len(objs) == 0 {
			return tree
		}
		o := pick(m, objs)
		k := pick(m, m.t().extraKeys)
		for _, have := range o.keys {
			if have == k {
				return tree
			}
		}
		o.keys = append(o.keys, k)
		o.vals = append(o.vals, m.sample())
	case 2, 3: // replace a value with one of each JSON type
		pick(m, slots).set(m.sample())
	case 4: // change an enumerated value
		var cands []slot
		for _, s := range slots {
			if _, ok := m.t().enumValues[s.key]; ok || s.key == "ok" {
				cands = append(cands, s)
			}
		}
		if len(cands) == 0 {
			return tree
		}
		s := pick(m, cands)
		if s.key == "ok" {
			b, _ := s.get().(bool)
			s.set(!b)
		} else {
			s.set(pick(m, m.t().enumValues[s.key]))
		}
	case 5, 6: // perturb a string
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
	case 7: // a number to a boundary
		var cands []slot
		for _, s := range slots {
			if _, ok := s.get().(number); ok {
				cands = append(cands, s)
			}
		}
		if len(cands) == 0 {
			return tree
		}
		pick(m, cands).set(number(pick(m, m.t().numbers)))
	case 8: // duplicate an array item
		if len(arrs) == 0 {
			return tree
		}
		a := pick(m, arrs)
		if len(a.items) == 0 {
			return tree
		}
		i := m.intn(len(a.items))
		j := m.intn(len(a.items) + 1)
		dup := cloneTree(a.items[i])
		a.items = append(a.items[:j], append([]any{dup}, a.items[j:]...)...)
	case 9: // grow an array to or past its limit
		if len(arrs) == 0 {
			return tree
		}
		m.grow(pick(m, arrs), pick(m, []int{8, 9, 64, 65}))
	case 10: // change the type of the whole container of a value
		s := pick(m, slots)
		switch v := s.get().(type) {
		case *object:
			a := &array{items: v.vals}
			s.set(a)
		case *array:
			s.set(&object{})
		default:
			s.set(&array{items: []any{v}})
		}
	default: // mutate inside a nested value
		s := pick(m, slots)
		switch s.get().(type) {
		case *object, *array:
			s.set(m.mutate(s.get()))
		default:
			s.set(m.sample())
		}
	}
	return tree
}

// TestMutationsDeterministic guards the promise that vectors.json does not
// depend on anything but the seed.
func TestMutationsDeterministic(t *testing.T) {
	a := &mutator{rng: rand.NewPCG(1, 0x5eed)}
	b := &mutator{rng: rand.NewPCG(1, 0x5eed)}
	for range 50 {
		x := encodeTree(a.mutate(mustParseTree(specClientHello)))
		y := encodeTree(b.mutate(mustParseTree(specClientHello)))
		if x != y {
			t.Fatalf("same seed, different mutations:\n%s\n%s", x, y)
		}
	}
}

// TestSchemaVerdictUsesExactNumbers checks the comparison's premise: the
// schema side sees numbers as written, not as float64.
func TestSchemaVerdictUsesExactNumbers(t *testing.T) {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(`1.0000000000000001`))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := v.(json.Number); !ok || string(n) != "1.0000000000000001" {
		t.Fatalf("UnmarshalJSON = %#v, want the json.Number as written", v)
	}
}
