// Package paths resolves where the broker keeps its runtime and state files,
// following DESIGN.md: flags first, then DSH_* variables, then XDG, then a
// per-user fallback. Every binary (broker, nativehost) resolves them here so
// they always agree.
package paths

import (
	"os"
	"path/filepath"
	"strconv"
)

// File names inside the runtime and state directories.
const (
	SocketName      = "broker.sock"
	TokenName       = "auth-token"
	JournalName     = "journal.db"
	AgentSocketName = "conn.sock" // the agent socket v2 (shared terminals)
)

// RuntimeDir returns the runtime directory: flag if nonempty, else
// $DSH_RUNTIME_DIR, else $XDG_RUNTIME_DIR/dsh, else /tmp/dsh-$UID.
func RuntimeDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv("DSH_RUNTIME_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "dsh")
	}
	return filepath.Join(os.TempDir(), "dsh-"+strconv.Itoa(os.Getuid()))
}

// Socket returns the socket path: flag if nonempty, else $DSH_SOCKET, else
// RUNTIME/broker.sock.
func Socket(flag, runtimeDir string) string {
	if flag != "" {
		return flag
	}
	if s := os.Getenv("DSH_SOCKET"); s != "" {
		return s
	}
	return filepath.Join(runtimeDir, SocketName)
}

// AgentSocket returns the agent socket's path: flag if nonempty, else
// $CONN_SOCKET (for the daemon and its clients alike), else
// RUNTIME/conn.sock.
func AgentSocket(flag, runtimeDir string) string {
	if flag != "" {
		return flag
	}
	if s := os.Getenv("CONN_SOCKET"); s != "" {
		return s
	}
	return filepath.Join(runtimeDir, AgentSocketName)
}

// Token returns the token file path in runtimeDir.
func Token(runtimeDir string) string { return filepath.Join(runtimeDir, TokenName) }

// StateDir returns the state directory: flag if nonempty, else
// $DSH_STATE_DIR, else $XDG_STATE_HOME/dsh, else ~/.local/state/dsh.
func StateDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv("DSH_STATE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "dsh")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "dsh")
}

// ConfigDir returns where `broker install` keeps the native host's
// configuration: $XDG_CONFIG_HOME/dsh, else ~/.config/dsh.
func ConfigDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "dsh")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "dsh")
}
