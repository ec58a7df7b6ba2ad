package mcpserver

import (
	"os"
	"strings"
)

// nameProcess sets the process name (/proc/PID/comm, at most 15 bytes)
// that the broker shows the user as the program asking for a tab.
func nameProcess(name string) {
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, name)
	if len(name) > 15 {
		name = name[:15]
	}
	_ = os.WriteFile("/proc/self/comm", []byte(name), 0)
}
