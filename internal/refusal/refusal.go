// Package refusal records why a socket the broker serves refused a
// connection or a request. The wire carries only a generic answer (a
// registry code, surface_unavailable); the reason goes to the log at debug
// level, or, when the owner asked for a trace, at warn level so that it
// reaches stderr. One function for every socket, so they trace alike.
package refusal

import (
	"log/slog"
	"os"
)

// Tracing variables: DSH_TRACE_REFUSALS=1 traces every socket the broker
// serves; CONN_TRACE_REFUSALS=1 (the agent socket spec's name) traces the
// agent socket.
const (
	EnvBroker = "DSH_TRACE_REFUSALS"
	EnvAgent  = "CONN_TRACE_REFUSALS"
)

// Log records refusals. The zero value discards them.
type Log struct {
	log   *slog.Logger
	trace bool
}

// New returns a Log writing to log (nil discards). Tracing is on when
// trace is true or when any of the environment variables env is "1".
func New(log *slog.Logger, trace bool, env ...string) Log {
	for _, v := range env {
		if os.Getenv(v) == "1" {
			trace = true
		}
	}
	return Log{log: log, trace: trace}
}

// Tracing reports whether reasons reach the log at warn level.
func (l Log) Tracing() bool { return l.trace }

// Refuse records one refusal: its reason and identifiers as slog
// key-value pairs. Never pass a secret: a trace is for the owner's eyes,
// but it is printed.
func (l Log) Refuse(reason string, args ...any) {
	if l.log == nil {
		return
	}
	if l.trace {
		l.log.Warn("refused: "+reason, args...)
		return
	}
	l.log.Debug("refused: "+reason, args...)
}
