package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/journal"
)

func runJournal(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("journal", "journal reset [flags]\n\nMoves an unusable action journal aside, with its write-ahead log and its\nkey (never deleting them), so the broker starts a new one. Stop the broker\nfirst. Fences of past actions are lost: retries of actions from before the\nreset are no longer recognised.", stderr)
	stateDir := fs.String("state-dir", "", "state directory (default as for serve)")
	if len(args) == 0 || args[0] != "reset" {
		if code, done := parseFlags(fs, args); done {
			return code
		}
		fs.Usage()
		return 2
	}
	if code, done := parseFlags(fs, args[1:]); done {
		return code
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	path := filepath.Join(paths.StateDir(*stateDir), paths.JournalName)
	moved, err := journal.Reset(path, time.Now())
	for _, to := range moved {
		fmt.Fprintf(stdout, "moved %s to %s\n", strings.TrimSuffix(to, filepath.Ext(to)), to)
	}
	if err != nil {
		fmt.Fprintf(stderr, "broker journal reset: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "the broker starts a new journal at its next start")
	return 0
}
