// Command gen writes protocol/v1.schema.json from package wire.
// Run it with `go generate ./protocol`.
package main

import (
	"log"
	"os"

	"github.com/dsh-browser/broker/wire"
)

func main() {
	if err := os.WriteFile("v1.schema.json", wire.SchemaJSON(), 0o644); err != nil {
		log.Fatal(err)
	}
}
