// Package test holds the end-to-end suites: real broker and native host
// processes on real Unix sockets in temporary runtime directories.
package test
