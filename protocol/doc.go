// Package protocol holds the published, generated protocol files:
// v1.schema.json (the v1 envelope, hello and welcome grammar) and
// PROTOCOL.md (the wire format written down next to the code).
//
// Regenerate after changing package wire:
//
//	go generate ./protocol
//
// The tests fail when a published file drifts from the code.
package protocol

//go:generate go run ./gen

import _ "embed"

// V1Schema is the published JSON Schema of the v1 wire.
//
//go:embed v1.schema.json
var V1Schema []byte
