// Package samples holds the bundled sample Snug apps, so that a person can
// install one with a single command (`broker app install --sample notebook`)
// and see a micro-app store data and think through their agent.
package samples

import _ "embed"

// Notebook is "Reading notes": it announces itself, keeps notes in a table
// and a visit counter in the key/value store, and asks the agent for a
// summary (streamed, cancellable). Self-contained: no CDN.
//
//go:embed notebook.html
var Notebook string

// All are the samples by name.
var All = map[string]string{"notebook": Notebook}
