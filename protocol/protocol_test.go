package protocol_test

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/protocol"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/wire"
)

// TestSchemaUpToDate is the drift test: the published file must be exactly
// what the code generates.
func TestSchemaUpToDate(t *testing.T) {
	want := protocol.SchemaJSON()
	if bytes.Equal(protocol.V1Schema, want) {
		return
	}
	line := 1
	for i := 0; i < len(want) && i < len(protocol.V1Schema) && want[i] == protocol.V1Schema[i]; i++ {
		if want[i] == '\n' {
			line++
		}
	}
	t.Fatalf("protocol/v1.schema.json differs from protocol.SchemaJSON() (first difference on line %d): "+
		"run `go generate ./protocol` after changing package wire or browser, and commit the result", line)
}

// TestExtensionModuleUpToDate is the drift test of extension/lib/protocol.js.
func TestExtensionModuleUpToDate(t *testing.T) {
	got, err := os.ReadFile("../extension/lib/protocol.js")
	if err != nil {
		t.Fatalf("%v: run `go generate ./protocol`", err)
	}
	if !bytes.Equal(got, protocol.ExtensionModule()) {
		t.Fatal("extension/lib/protocol.js differs from the Go code: run `go generate ./protocol`, and commit the result")
	}
}

// TestMethodSchemasPublished: every client method's params schema is in
// $defs under its name, and compiles.
func TestMethodSchemasPublished(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(protocol.V1Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(wire.SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	for _, types := range []map[string]any{browser.ParamsTypes, apps.ParamsTypes} {
		for method := range types {
			if _, err := c.Compile(wire.SchemaID + "#/$defs/" + method); err != nil {
				t.Errorf("%s: %v", method, err)
			}
		}
	}
}

// TestExtensionSchemaUpToDate is the drift test of the extension's copy
// (the extension cannot read files outside its directory).
func TestExtensionSchemaUpToDate(t *testing.T) {
	got, err := os.ReadFile("../extension/lib/v1.schema.json")
	if err != nil {
		t.Fatalf("%v: run `go generate ./protocol`", err)
	}
	if !bytes.Equal(got, protocol.SchemaJSON()) {
		t.Fatal("extension/lib/v1.schema.json differs from protocol.SchemaJSON(): " +
			"run `go generate ./protocol` after changing package wire or browser, and commit the result")
	}
}

func compile(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(protocol.V1Schema))
	if err != nil {
		t.Fatalf("protocol/v1.schema.json is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(wire.SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Schema{}
	refs := map[string]string{
		"envelope": wire.SchemaID,
		"hello":    wire.SchemaID + "#/$defs/hello",
		"welcome":  wire.SchemaID + "#/$defs/welcome",
	}
	for method := range browser.ParamsTypes {
		refs[method] = wire.SchemaID + "#/$defs/" + method // params vectors are named by method
	}
	for kind, ref := range refs {
		s, err := c.Compile(ref)
		if err != nil {
			t.Fatalf("compiling %s: %v", ref, err)
		}
		out[kind] = s
	}
	return out
}

func TestSchemaCompiles(t *testing.T) {
	compile(t)
}

// TestSchemaHeader checks the identifiers the schema is published under.
func TestSchemaHeader(t *testing.T) {
	var s struct {
		Schema string `json:"$schema"`
		ID     string `json:"$id"`
	}
	if err := json.Unmarshal(protocol.V1Schema, &s); err != nil {
		t.Fatal(err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %q, want draft 2020-12", s.Schema)
	}
	if s.ID != wire.SchemaID {
		t.Errorf("$id = %q, want %q", s.ID, wire.SchemaID)
	}
}

// TestSchemaErrorCodes checks that the error response's code enum is the
// registry, in order.
func TestSchemaErrorCodes(t *testing.T) {
	var s struct {
		OneOf []struct {
			Properties struct {
				OK   *struct{ Const *bool } `json:"ok"`
				Code *struct{ Enum []string }
			}
		}
	}
	if err := json.Unmarshal(protocol.V1Schema, &s); err != nil {
		t.Fatal(err)
	}
	var enums [][]string
	for _, branch := range s.OneOf {
		if branch.Properties.Code != nil {
			if ok := branch.Properties.OK; ok == nil || ok.Const == nil || *ok.Const {
				t.Errorf("the branch with a code is not the ok:false response")
			}
			enums = append(enums, branch.Properties.Code.Enum)
		}
	}
	if len(enums) != 1 {
		t.Fatalf("found %d envelope branches with a code, want 1", len(enums))
	}
	want := make([]string, len(wire.Codes))
	for i, c := range wire.Codes {
		want[i] = string(c)
	}
	if !slices.Equal(enums[0], want) {
		t.Errorf("code enum = %v\nwant wire.Codes %v", enums[0], want)
	}
	if len(want) != 27 {
		t.Errorf("the registry has %d codes, want the 25 the reference publishes and 2 for admission", len(want))
	}
	if ref := want[:wire.ReferenceCodes]; ref[0] != "INVALID_REQUEST" || ref[len(ref)-1] != "INTERNAL_ERROR" {
		t.Errorf("the reference's codes are not first, in order: %v", ref)
	}
	if added := want[wire.ReferenceCodes:]; !slices.Equal(added, []string{"ADMISSION_PENDING", "ADMISSION_DENIED"}) {
		t.Errorf("codes added after the reference's: %v", added)
	}
}

// TestVectorsMatchSchema checks testdata/vectors.json (written by
// `go test ./wire -run TestVectors -update`) against the published schema
// alone, independently of the Go validator that produced the verdicts. A
// vector with a rule is refused by Go only by that rule past the schema: the
// schema accepts it.
func TestVectorsMatchSchema(t *testing.T) {
	data, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Kind  string `json:"kind"`
		JSON  string `json:"json"`
		Valid bool   `json:"valid"`
		Rule  string `json:"rule"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&vectors); err != nil {
		t.Fatal(err)
	}
	schemas := compile(t)
	counts := map[string]int{}
	for i, v := range vectors {
		s, ok := schemas[v.Kind]
		if !ok {
			t.Fatalf("vector %d has unknown kind %q", i, v.Kind)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(v.JSON)))
		if err != nil {
			t.Errorf("vector %d is not JSON: %v", i, err)
			continue
		}
		if valid := s.Validate(inst) == nil; valid != (v.Valid || v.Rule != "") {
			t.Errorf("vector %d: schema says valid=%v, file says %v (rule %q)\n%s", i, valid, v.Valid, v.Rule, v.JSON)
		}
		counts[v.Kind]++
	}
	if counts["envelope"] < 1000 || counts["hello"]+counts["welcome"] < 1000 || counts[browser.MethodAct]+counts[browser.MethodBatch] < 1000 {
		t.Errorf("vector counts %v, want at least 1000 envelopes, 1000 hellos and welcomes, 1000 action and batch params", counts)
	}
}
