package protocol_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dsh-browser/broker/protocol"
)

// snugSchemaSums pins every file of snug/ to the SHA-256 of the
// specification's copy (the shared spec's snug-schemas directory, itself
// copied byte for byte from snugprotocol/spec). The schemas are published,
// not generated: a file that differs from these sums was edited, and the
// published contract with it.
var snugSchemaSums = map[string]string{
	"README.md":                 "33dfa477156c2e76830763b861d0ff57a029094d07f725bfc0cfef177196f219",
	"access-request.json":       "8f59b59687ad3351a04893359726d290e3ec5609dac8cac91c81d85c414dec8f",
	"access-response.json":      "ae57234c6051cbb500ef1850d4a42db9a7ec56836c71ba7bd9677c0bf828098b",
	"app-announce.json":         "5465c01b4bb2cb06c140f2662711be09d834525bcbdbf61518bab23971f2ba86",
	"app-cancel.json":           "d476dedfd0970e191e81e57764c4b382432258e4bc405ef3ad26356d03b91d1e",
	"app-event.json":            "a9f2830e553cd443739a7d21220f4fa62c04b92dcdb62b8cb97648301f44ec3e",
	"app-message.json":          "7e1bf9d610dae751783132f6c764f62bfecc01cd477f6657121181073aa8fd0f",
	"app-request-envelope.json": "a629a096c3c560680ba1acc17a7931f2f1f7a8ee02bc6a0ac54ca972c97e01af",
	"app-response.json":         "80e18e8d332a2d53f4d1cf260bc103533ecf79a7f9806ab9c3ad50b614e691e8",
	"db-request.json":           "347f6f83e144a64a21a9d756e5adb8da3fef4e4fbe669f90b8b7b8dec386aad8",
	"db-response.json":          "330efb594c7a34d11c587130b34588091ab3d31b33d62e6ddcdc9026207b0396",
	"host-event.json":           "8aeafc3ce3a11100641a82330d2720f7a4feca1162a7a7e1bf266976a352785e",
	"host-ready.json":           "45842d5a5e9e104b198c661675df43e2f8bca0415016d9a4937162a7562deec1",
	"net-request.json":          "424e5342ee7dda5609d83ec4eadec75fd8dd8dc97d993e5a0505c8269d834472",
	"net-response.json":         "1529ccc772eef5c26ca6be335f1f6c38ddf21e632959860b7da8d013d4a29de5",
	"open-url-request.json":     "e485ba743275f69a5fa9c755ecd8cfeba767eed9d0b9336071ce233c5164d60b",
	"open-url-result.json":      "866ff771cfcd5b205e9ca3947012993e31fba937739f1ec73d14ed9927170e19",
}

// TestSnugSchemasVerbatim checks that the embedded files are exactly the
// files in protocol/snug, and that those are the specification's bytes.
func TestSnugSchemasVerbatim(t *testing.T) {
	entries, err := fs.ReadDir(protocol.SnugSchemas, "snug")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	var want []string
	for name := range snugSchemaSums {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("protocol/snug holds %v\nwant %v", names, want)
	}
	for _, name := range names {
		embedded, err := fs.ReadFile(protocol.SnugSchemas, path.Join("snug", name))
		if err != nil {
			t.Fatal(err)
		}
		onDisk, err := os.ReadFile(path.Join("snug", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(embedded, onDisk) {
			t.Errorf("snug/%s: the embedded copy differs from the file (rebuild)", name)
		}
		sum := sha256.Sum256(onDisk)
		if got := hex.EncodeToString(sum[:]); got != snugSchemaSums[name] {
			t.Errorf("snug/%s is not the specification's file (SHA-256 %s): the published schemas are copied verbatim, never edited", name, got)
		}
	}
}

// TestSnugSchemasCompile compiles every published Snug schema with the
// JSON Schema validator the conformance tests use.
func TestSnugSchemasCompile(t *testing.T) {
	for name := range snugSchemaSums {
		if path.Ext(name) != ".json" {
			continue
		}
		data, err := fs.ReadFile(protocol.SnugSchemas, path.Join("snug", name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("snug/%s is not JSON: %v", name, err)
		}
		c := jsonschema.NewCompiler()
		url := "https://snug.invalid/" + name
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compile(url); err != nil {
			t.Errorf("compiling snug/%s: %v", name, err)
		}
	}
}

// TestSnugVectorsMatchSchemas checks testdata/snug-vectors.json (written by
// `go test ./snug/frame -run TestVectors -update`) against the published
// schemas alone, independently of the Go parser that produced the
// verdicts: the schema accepts a vector exactly when Go does, or when a
// named prose refinement is why Go refuses it.
func TestSnugVectorsMatchSchemas(t *testing.T) {
	data, err := os.ReadFile("testdata/snug-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Kind       string `json:"kind"`
		JSON       string `json:"json"`
		Valid      bool   `json:"valid"`
		Refinement string `json:"refinement"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&vectors); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	counts := map[string]int{}
	for i, v := range vectors {
		s, ok := schemas[v.Kind]
		if !ok {
			raw, err := fs.ReadFile(protocol.SnugSchemas, "snug/"+v.Kind+".json")
			if err != nil {
				t.Fatalf("vector %d has kind %q: %v", i, v.Kind, err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			url := "https://snug.invalid/" + v.Kind + ".json"
			if err := c.AddResource(url, doc); err != nil {
				t.Fatal(err)
			}
			if s, err = c.Compile(url); err != nil {
				t.Fatal(err)
			}
			schemas[v.Kind] = s
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(v.JSON))
		if err != nil {
			t.Errorf("vector %d is not JSON: %v", i, err)
			continue
		}
		if v.Valid && v.Refinement != "" {
			t.Errorf("vector %d is valid yet refused by %q", i, v.Refinement)
		}
		want := v.Valid || v.Refinement != ""
		if valid := s.Validate(inst) == nil; valid != want {
			t.Errorf("vector %d: schema says valid=%v, file says valid=%v refinement=%q\n%.300s", i, valid, v.Valid, v.Refinement, v.JSON)
		}
		counts[v.Kind]++
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if len(counts) != 13 || total < 2000 {
		t.Errorf("vectors cover %d kinds with %d vectors, want the 13 frame types and at least 2000", len(counts), total)
	}
}
