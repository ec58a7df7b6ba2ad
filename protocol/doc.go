// Package protocol holds the published protocol files: v1.schema.json (the
// v1 envelope, hello and welcome grammar, generated from package wire),
// PROTOCOL.md (the wire format written down next to the code), and snug/
// (the Snug frame schemas, published as the Snug specification's Appendix C
// gives them).
//
// Regenerate after changing package wire:
//
//	go generate ./protocol
//
// The tests fail when a published file drifts from the code, and when a Snug
// schema is not byte-for-byte the specification's.
package protocol

//go:generate go run ./gen

import "embed"

// V1Schema is the published JSON Schema of the v1 wire.
//
//go:embed v1.schema.json
var V1Schema []byte

// SnugSchemas holds the Snug frame schemas under snug/: one <name>.json per
// frame type (the thirteen frames, the chat envelope app-request-envelope,
// and the [1.1] access pair), each copied verbatim from the specification,
// and the README that says where they come from. Package snug/frame's
// conformance tests compile them.
//
//go:embed snug
var SnugSchemas embed.FS
