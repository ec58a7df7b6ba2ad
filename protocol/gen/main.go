// Command gen writes protocol/v1.schema.json from package wire, and the same
// bytes to extension/lib/v1.schema.json: the extension can only load files
// inside its own directory. Run it with `go generate ./protocol`.
package main

import (
	"log"
	"os"

	"github.com/dsh-browser/broker/wire"
)

// outputs are relative to protocol/, where go generate runs the command.
var outputs = []string{"v1.schema.json", "../extension/lib/v1.schema.json"}

func main() {
	data := wire.SchemaJSON()
	for _, path := range outputs {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
