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

// Tasks is "Tasks": a connected app. It lists and adds the user's tasks at
// a task service through a connection (snug-connection://tasks/…) the user
// approves in the tab; it never sees the key, and every change is asked.
// TasksConnection is a requirement for it to declare, for a service at
// api.tasks.example; edit the host and the header for a real one.
//
//go:embed tasks.html
var Tasks string

//go:embed tasks.connection.json
var TasksConnection string

// All are the samples by name.
var All = map[string]string{"notebook": Notebook, "tasks": Tasks}
