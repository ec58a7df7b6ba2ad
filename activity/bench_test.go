package activity_test

import (
	"path/filepath"
	"testing"

	"github.com/dsh-browser/broker/activity"
)

// BenchmarkAction is what the log costs one action: a begin record written
// and synced, then an end record written.
func BenchmarkAction(b *testing.B) {
	l := activity.Open(filepath.Join(b.TempDir(), activity.FileName), activity.Options{})
	defer l.Close()
	a := fill("bench (pid 1)", 12)
	for b.Loop() {
		id := l.Begin(a)
		l.End(id, "succeeded", "observed", "")
	}
}

// BenchmarkQuery is one console refresh: the newest 100 of a full log.
func BenchmarkQuery(b *testing.B) {
	l := activity.Open(filepath.Join(b.TempDir(), activity.FileName), activity.Options{})
	defer l.Close()
	for range activity.DefaultMaxEntries {
		id := l.Begin(fill("bench (pid 1)", 12))
		l.End(id, "succeeded", "observed", "")
	}
	for b.Loop() {
		l.Query(activity.Query{Agent: "bench (pid 1)"})
	}
}
