package journal_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-browser/broker/journal"
)

// The runtime's calls for one browser action, then a retry of it.
func Example() {
	dir, _ := os.MkdirTemp("", "journal") // a private (0700) directory
	defer os.RemoveAll(dir)
	// Creates journal.db, its key journal.key and its log journal.wal.
	j := journal.Open(filepath.Join(dir, "journal.db"), journal.Options{})
	defer j.Close()
	if p := j.Err(); p != nil {
		fmt.Println(p.Reason, "; to fix:", p.Fix)
		return
	}

	k := journal.Key{Scope: "client journalKey\x00session", RequestID: "req-1"}
	hash := sha256.Sum256([]byte(`{"kind":"click","ref":"e12"}`))
	if rec, err := j.Lookup(k); err != nil || rec != nil {
		return // refuse, or answer the retry from rec
	}
	if err := j.Reserve(k, hash, "click"); err != nil {
		return // do not dispatch
	}
	// ... the provider dispatches the click and observes the page ...
	if err := j.Settle(k, journal.OutcomeSucceeded, journal.DispatchObserved); err != nil {
		return // report the outcome as unknown
	}

	// The client retries, after a reconnect or a broker restart.
	err := j.Reserve(k, hash, "click")
	if dup, ok := errors.AsType[*journal.DuplicateError](err); ok {
		fmt.Println("retry of a", dup.Record.State, "action:", dup.Record.Outcome, dup.Record.Dispatch)
	}
	// Output: retry of a settled action: succeeded observed
}
