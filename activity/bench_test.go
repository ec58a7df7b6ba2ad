package activity_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dsh-browser/broker/activity"
)

// BenchmarkAction is what the log costs one action: a begin record written
// and synced (Begin; the broker syncs it beside the journal's intent with
// BeginSyncing), then an end record written. It
// reports the median and the 99th percentile (ms/op-p50, ms/op-p99) beside
// the mean, as the journal's BenchmarkActionCost does; the file is in the
// test's temp directory (TMPDIR moves it).
func BenchmarkAction(b *testing.B) {
	l := activity.Open(filepath.Join(b.TempDir(), activity.FileName), activity.Options{})
	defer l.Close()
	a := fill("bench (pid 1)", 12)
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		id := l.Begin(a)
		l.End(id, "succeeded", "observed", "")
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	at := func(p float64) float64 {
		i := int(p*float64(len(took))+0.999999) - 1
		return float64(took[max(i, 0)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "ms/op-p50")
	b.ReportMetric(at(0.99), "ms/op-p99")
}

// BenchmarkQuery is one console refresh: the newest 100 of one agent's
// entries in a full log (10,000).
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
