package frame_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dsh-browser/broker/internal/jsonmut"
	"github.com/dsh-browser/broker/protocol"
	"github.com/dsh-browser/broker/snug/frame"
)

var update = flag.Bool("update", false, "rewrite protocol/testdata/snug-vectors.json")

const vectorsFile = "../../protocol/testdata/snug-vectors.json"

// mutationsPerBase is how many distinct mutations each base frame gets.
const mutationsPerBase = 60

// schemas compiles the published schema of each frame type, by kind.
var schemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	for _, t := range frame.Types {
		kind := kindOf(t)
		data, err := fs.ReadFile(protocol.SnugSchemas, "snug/"+kind+".json")
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		c := jsonschema.NewCompiler()
		url := "https://snug.invalid/" + kind + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
		if out[kind], err = c.Compile(url); err != nil {
			return nil, err
		}
	}
	return out, nil
})

func mustSchemas(tb testing.TB) map[string]*jsonschema.Schema {
	tb.Helper()
	s, err := schemas()
	if err != nil {
		tb.Fatalf("compiling protocol/snug: %v", err)
	}
	return s
}

// schemaVerdict reports whether data is one JSON value that the published
// schema of kind accepts. Numbers stay json.Number, so the checks are
// exact. isJSON is false when data is not JSON at all.
func schemaVerdict(tb testing.TB, kind string, data []byte) (valid, isJSON bool) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return false, false
	}
	return mustSchemas(tb)[kind].Validate(inst) == nil, true
}

// goVerdict reports whether Parse accepts data as a frame of kind.
func goVerdict(kind string, data []byte) (bool, error) {
	f, err := frame.Parse(data)
	return err == nil && kindOf(f.FrameType()) == kind, err
}

// sizeClass is R6, as Appendix B states it.
func sizeClass(kind string) int {
	switch kind {
	case "db-request", "db-response":
		return 8_388_608
	case "net-request", "net-response":
		return 1_114_112
	}
	return 262_144
}

// refinements returns the prose rules that refuse data as a frame of kind,
// whatever its schema says; each has its own cases in refine_test.go.
func refinements(kind string, data []byte) []string {
	var out []string
	if len(data) > sizeClass(kind) {
		out = append(out, ruleSizeClass)
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return out
	}
	switch kind {
	case "net-request":
		method, _ := m["method"].(string)
		if _, has := m["body"]; has && (method == "GET" || method == "HEAD") {
			out = append(out, ruleBodyOnGet)
		}
		if h, ok := m["headers"].(map[string]any); ok {
			for name := range h {
				if slices.Contains([]string{"authorization", "cookie", "set-cookie", "x-api-key", "proxy-authorization"}, strings.ToLower(name)) {
					out = append(out, ruleCredentialHeader)
					break
				}
			}
		}
	case "open-url-request":
		if u, ok := m["url"].(string); ok && frame.CheckOpenURL(u) != nil {
			out = append(out, ruleOpenURL)
		}
	}
	return out
}

// verdicts holds Go to the published schema on data: Go accepts exactly
// what the schema accepts, less what a prose refinement refuses. It returns
// the refinement that explains a difference ("" for none) and a
// description of any disagreement.
func verdicts(tb testing.TB, kind string, data []byte) (refinement string, disagreement string) {
	goValid, goErr := goVerdict(kind, data)
	schemaValid, isJSON := schemaVerdict(tb, kind, data)
	if !isJSON {
		if goValid {
			return "", "Go accepts a text that is not JSON"
		}
		return "", ""
	}
	rules := refinements(kind, data)
	switch {
	case goValid && len(rules) > 0:
		return "", fmt.Sprintf("Go accepts a frame that %s refuses", rules[0])
	case goValid == schemaValid:
		return "", ""
	case schemaValid && len(rules) > 0:
		return rules[0], ""
	}
	return "", fmt.Sprintf("Go valid=%v (%v), schema valid=%v", goValid, goErr, schemaValid)
}

// vector is one entry of snug-vectors.json.
type vector struct {
	Kind  string `json:"kind"`
	JSON  string `json:"json"`
	Valid bool   `json:"valid"` // Go's verdict
	// Refinement names the prose rule under which Go refuses a frame the
	// schema accepts; the schema's verdict is Valid || Refinement != "".
	Refinement string `json:"refinement,omitempty"`
}

var mutationVocabulary = func() jsonmut.Vocabulary {
	types := []any{"snug:future-frame", "app-message", ""}
	for _, t := range frame.Types {
		types = append(types, string(t))
	}
	var methods, ops []any
	for _, m := range frame.NetMethods {
		methods = append(methods, m)
	}
	methods = append(methods, "get", "OPTIONS")
	for _, op := range []string{"exec", "export", "import", "kvGet", "kvSet", "EXEC", "query"} {
		ops = append(ops, op)
	}
	var long []string
	for _, n := range []int{64, 65, 128, 129, 200, 201, 256, 257, 300, 301} {
		long = append(long, strings.Repeat("x", n), strings.Repeat("😀", n))
	}
	return jsonmut.Vocabulary{
		Keys: []string{"extra", "appId", "requestId", "instanceId", "body", "headers", "data", "error", "text",
			"Authorization", "COOKIE", "X-Api-Key", "accept", "streaming", "ok", "seq", "op", "value", "key", "sql",
			"params", "method", "url", "status", "reason", "access", "net", "openUrl", "locale", "rows", "columns",
			"bytesBase64", "truncated", "attemptsRemaining", "rawExcerpt", "__proto__", ""},
		Enums: map[string][]any{
			"type":      types,
			"v":         {jsonmut.Number("1"), jsonmut.Number("2"), jsonmut.Number("1.0"), "1"},
			"method":    methods,
			"op":        ops,
			"theme":     {"light", "dark", "Dark"},
			"status":    {"opened", "declined", "refused", "failed", jsonmut.Number("200"), jsonmut.Number("99"), jsonmut.Number("600")},
			"ok":        {true, false, "true"},
			"streaming": {true, false},
			"code":      {"PARSE_FAILED", "SUPERSEDED", "NET_SIZE_EXCEEDED", "", strings.Repeat("E", 65)},
		},
		Strings: append([]string{
			"https://example.com/", "http://example.com/", "https://user:pw@example.com/", "https://@example.com/",
			"javascript:alert(1)", "https:example.com", "GET", "HEAD", "POST", "snug:app-message", "opened", "light",
			"exec", "kvSet", "PARSE_FAILED", "authorization", "Set-Cookie",
		}, long...),
		Numbers: []string{"0", "1", "-1", "1.0", "1e0", "1.5", "2", "99", "100", "200", "599", "600", "-0",
			"9007199254740991", "9007199254740992", "1e2", "0.5"},
	}
}()

// mutations returns the deterministic mutation vectors, with Go's verdicts.
var mutations = sync.OnceValue(func() []vector {
	seen := map[string]bool{}
	for _, g := range goldens() {
		seen[g.kind+"\x00"+g.json] = true
	}
	var out []vector
	for i, b := range bases {
		kind := b.kind()
		m := jsonmut.New(uint64(i+1), mutationVocabulary)
		for made, tries := 0, 0; made < mutationsPerBase; tries++ {
			if tries > 100*mutationsPerBase {
				panic(fmt.Sprintf("only %d distinct mutations of %s", made, b.name))
			}
			tree := m.Mutate(jsonmut.MustParse(b.obj.String()))
			if m.Intn(3) == 0 { // a second mutation on top
				tree = m.Mutate(tree)
			}
			text := jsonmut.Encode(tree)
			if seen[kind+"\x00"+text] {
				continue
			}
			seen[kind+"\x00"+text] = true
			valid, _ := goVerdict(kind, []byte(text))
			out = append(out, vector{Kind: kind, JSON: text, Valid: valid})
			made++
		}
	}
	return out
})

// TestAgreement holds Parse to the published schemas on every golden case
// and every mutation, the prose refinements excepted.
func TestAgreement(t *testing.T) {
	for _, g := range goldens() {
		refinement, bad := verdicts(t, g.kind, []byte(g.json))
		if bad != "" {
			t.Errorf("golden %s/%s: %s\n%.300s", g.kind, g.name, bad, g.json)
		}
		if refinement != g.refinement {
			t.Errorf("golden %s/%s: refused by %q, want %q", g.kind, g.name, refinement, g.refinement)
		}
	}
	counts := map[string][2]int{}
	refined := map[string]int{}
	for _, v := range mutations() {
		refinement, bad := verdicts(t, v.Kind, []byte(v.JSON))
		if bad != "" {
			t.Errorf("mutation of %s: %s\n%s", v.Kind, bad, v.JSON)
		}
		if refinement != "" {
			refined[refinement]++
		}
		c := counts[v.Kind]
		if v.Valid {
			c[0]++
		} else {
			c[1]++
		}
		counts[v.Kind] = c
	}
	total := 0
	for _, kind := range slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	}) {
		c := counts[kind]
		total += c[0] + c[1]
		t.Logf("%s: %d mutations, %d valid", kind, c[0]+c[1], c[0])
		// A set of nearly all invalid mutations would test little; the strict
		// frames reject most mutations by design, hence 1 in 20.
		if c[0] < (c[0]+c[1])/20 {
			t.Errorf("only %d of %d %s mutations are valid: the set tests little", c[0], c[0]+c[1], kind)
		}
	}
	for rule, n := range refined {
		t.Logf("%d mutations refused by %s", n, rule)
	}
	if len(counts) != len(frame.Types) {
		t.Errorf("mutations cover %d frame types, want %d", len(counts), len(frame.Types))
	}
	if total < 1000 {
		t.Errorf("%d mutations, want at least 1000", total)
	}
}

// TestGolden checks Go's verdict on each golden case, and that a refused
// frame is an *Error or ErrIgnored.
func TestGolden(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.kind+"/"+g.name, func(t *testing.T) {
			valid, err := goVerdict(g.kind, []byte(g.json))
			if valid != g.valid {
				t.Fatalf("valid = %v, want %v (err: %v)\n%.300s", valid, g.valid, err, g.json)
			}
			if err != nil && !errors.Is(err, frame.ErrIgnored) {
				if _, ok := errors.AsType[*frame.Error](err); !ok {
					t.Errorf("error %v is a %T, want *frame.Error or ErrIgnored", err, err)
				}
			}
		})
	}
}

func TestGoldenNames(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range goldens() {
		key := g.kind + "/" + g.name
		if seen[key] {
			t.Errorf("duplicate golden name %q", key)
		}
		seen[key] = true
	}
}

// TestVectors keeps protocol/testdata/snug-vectors.json equal to the
// golden cases and mutations with their verdicts. Regenerate it with
//
//	go test ./snug/frame -run TestVectors -update
func TestVectors(t *testing.T) {
	var vs []vector
	for _, g := range goldens() {
		if !g.goOnly {
			vs = append(vs, vector{Kind: g.kind, JSON: g.json, Valid: g.valid, Refinement: g.refinement})
		}
	}
	for _, v := range mutations() {
		v.Refinement, _ = verdicts(t, v.Kind, []byte(v.JSON))
		vs = append(vs, v)
	}
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, v := range vs {
		if !json.Valid([]byte(v.JSON)) {
			t.Fatalf("vector is not JSON: %q", v.JSON)
		}
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		if i < len(vs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	want := b.Bytes()
	if len(want) > 2<<20 {
		t.Errorf("snug-vectors.json would be %d bytes, want at most 2 MiB", len(want))
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
		t.Fatalf("%v; run go test ./snug/frame -run TestVectors -update", err)
	}
	if !bytes.Equal(got, want) {
		n := 0
		for n < len(got) && n < len(want) && got[n] == want[n] {
			n++
		}
		t.Fatalf("protocol/testdata/snug-vectors.json is stale (first difference on line %d); "+
			"run go test ./snug/frame -run TestVectors -update", 1+bytes.Count(want[:n], []byte("\n")))
	}
}
