// Package browser is the vocabulary of the browser kind: the public
// browser.* request and result types, their limits, the action and
// expectation kinds, named keys, and the capability and method names of
// both sides (client methods, and the provider methods the extension
// serves). It is a leaf: the runtime that serves these methods
// (browser/runtime), the broker, the Go client and the MCP adapter all
// speak it, and no client imports the runtime.
//
// The shapes follow the reference implementation's type sheet
// (spec/reference/dsh-reference-digest.md §16), so a client written for it
// works unchanged; where we go further we add fields and capabilities,
// never rename.
package browser
