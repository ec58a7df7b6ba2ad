// Package bench holds the broker's benchmarks. They run the real broker, a
// provider and a client in one process over real Unix sockets, next to a
// baseline that does the same socket hops without the broker, so that
// results can be read as a ratio measured side by side. BENCHMARKS.md at the
// repository root records the figures and how to rerun them.
package bench
