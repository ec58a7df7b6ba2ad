// Command gen writes the published protocol files from the Go code:
// protocol/v1.schema.json (package protocol: the wire grammar and every
// method's params schema) and its copy extension/lib/v1.schema.json, which
// the extension's interpreter reads (the extension can only load files
// inside its own directory); and extension/lib/protocol.js,
// the names and limits the extension shares with the broker. Run it with
// `go generate ./protocol`.
package main

import (
	"log"
	"os"

	"github.com/dsh-browser/broker/protocol"
)

func main() {
	// Paths are relative to protocol/, where go generate runs the command.
	outputs := map[string][]byte{
		"v1.schema.json":                  protocol.SchemaJSON(),
		"../extension/lib/v1.schema.json": protocol.SchemaJSON(),
		"../extension/lib/protocol.js":    protocol.ExtensionModule(),
	}
	for path, data := range outputs {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
