package session

import (
	"strings"
)

// keyBytes returns what a named key sends to the terminal, and whether the
// name is known. Names are case-insensitive: Enter, Tab, Backspace,
// Escape, Space, Up, Down, Right, Left, Home, End, PageUp, PageDown,
// Insert, Delete, F1–F12, and Ctrl-A … Ctrl-Z (also "Ctrl+A" or "C-a").
// Cursor keys follow the program's cursor-key mode (appCursor).
func keyBytes(name string, appCursor bool) ([]byte, bool) {
	k := strings.ToLower(strings.TrimSpace(name))
	if b, ok := namedKeys[k]; ok {
		return []byte(b), true
	}
	if c, ok := cursorKeys[k]; ok {
		if appCursor {
			return []byte{0x1b, 'O', c}, true
		}
		return []byte{0x1b, '[', c}, true
	}
	for _, prefix := range []string{"ctrl-", "ctrl+", "c-"} {
		if rest, ok := strings.CutPrefix(k, prefix); ok && len(rest) == 1 {
			switch c := rest[0]; {
			case c >= 'a' && c <= 'z':
				return []byte{c - 'a' + 1}, true
			case c == '@' || c == ' ':
				return []byte{0}, true
			case c >= '[' && c <= '_':
				return []byte{c - '@'}, true
			}
		}
	}
	return nil, false
}

// isEnter reports whether a key name is Enter (it submits the line).
func isEnter(name string) bool {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "enter", "return", "ctrl-m", "ctrl+m", "c-m", "ctrl-j", "ctrl+j", "c-j":
		return true
	}
	return false
}

var cursorKeys = map[string]byte{"up": 'A', "down": 'B', "right": 'C', "left": 'D', "home": 'H', "end": 'F'}

var namedKeys = map[string]string{
	"enter": "\r", "return": "\r",
	"tab":       "\t",
	"backspace": "\x7f",
	"escape":    "\x1b", "esc": "\x1b",
	"space":  " ",
	"insert": "\x1b[2~", "delete": "\x1b[3~",
	"pageup": "\x1b[5~", "pagedown": "\x1b[6~",
	"f1": "\x1bOP", "f2": "\x1bOQ", "f3": "\x1bOR", "f4": "\x1bOS",
	"f5": "\x1b[15~", "f6": "\x1b[17~", "f7": "\x1b[18~", "f8": "\x1b[19~",
	"f9": "\x1b[20~", "f10": "\x1b[21~", "f11": "\x1b[23~", "f12": "\x1b[24~",
}

// keyLabel is how a key shows in a proposal the owner reads.
func keyLabel(name string) string {
	k := strings.TrimSpace(name)
	if k == " " || strings.EqualFold(k, "space") {
		return " "
	}
	return "<" + k + ">"
}
