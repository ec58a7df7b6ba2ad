package term_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

// sharedShell starts a shared shell with one agent participating.
func sharedShell(t *testing.T) (*termtest.Owner, *termtest.Agent) {
	t.Helper()
	srv, path := termtest.StartServer(t, agentsock.Config{})
	o := termtest.StartOwner(t, termtest.OwnerConfig{Session: termtest.Shell(t), Server: srv})
	o.WaitText("$")
	a := termtest.Dial(t, path)
	termtest.Join(t, o, a, "viewer")
	return o, a
}

// Full-screen programs draw on the alternate screen; the snapshot says so
// and shows what the person sees, and both return to the shell after.
func TestFullScreenProgramsUseTheAlternateScreen(t *testing.T) {
	for _, prog := range []struct {
		name, open, quit, shows string
	}{
		{"less", "less lines.txt", "q", "line 1\n"},
		{"vi", "vi -u NONE -N -i NONE lines.txt", "\x1b:q!\r", "line 1\n"},
	} {
		t.Run(prog.name, func(t *testing.T) {
			if _, err := exec.LookPath(prog.name); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed; scripts/test.sh installs it", prog.name)
				}
				t.Skipf("%s is not installed (apt-get install %s)", prog.name, prog.name)
			}
			o, a := sharedShell(t)
			dir := o.Session().Dir()
			var b strings.Builder
			for i := 1; i <= 200; i++ {
				b.WriteString("line " + strings.Repeat("x", i%50) + " " + itoa(i) + "\n")
			}
			if err := os.WriteFile(filepath.Join(dir, "lines.txt"), []byte(strings.ReplaceAll(b.String(), "line  1\n", "line 1\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			o.Type(prog.open + "\r")
			o.WaitText(" 20\n")
			snap := termtest.SameScreen(t, o, a)
			if !snap.AlternateScreen || !o.AltScreen() {
				t.Fatalf("%s: alternate screen: snapshot %v, owner %v", prog.name, snap.AlternateScreen, o.AltScreen())
			}
			if !strings.Contains(o.Bar(), "t1 | shared with 1") {
				t.Fatalf("%s drew over the bar: %q", prog.name, o.Bar())
			}
			o.Type(prog.quit)
			o.WaitScreen("the shell again", func(rows []string) bool {
				return strings.Contains(strings.Join(rows, "\n"), prog.open)
			})
			snap = termtest.SameScreen(t, o, a)
			if snap.AlternateScreen || o.AltScreen() {
				t.Fatalf("%s: still on the alternate screen after quitting", prog.name)
			}
			o.WaitBar("t1 | shared with 1")
		})
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// Nothing the program prints reaches the bar's row: not scrolling, not a
// reset scroll region, not clearing the screen, not a full reset; the
// program's screen stays exactly as it would be without the bar.
func TestTheBarNeverCorruptsTheScreen(t *testing.T) {
	o, a := sharedShell(t)
	steps := []struct{ what, cmd, shows string }{
		{"scrolling", "seq 1 200", "200\n$"},
		{"a reset scroll region", `printf '\e[r'; seq 300 340`, "340\n$"},
		{"a region over the bar", `printf '\e[1;999r\e[999;1H'; seq 400 430`, "430\n$"},
		{"clearing the screen", "clear; echo cleared", "cleared\n$"},
		{"erasing below", `printf '\e[5;1H\e[Jerased below\n'`, "erased below\n$"},
		{"a soft reset", `printf '\e[3;5r\e[!p'; seq 500 540`, "540\n$"},
		{"a full reset", `printf '\ec'; echo after-reset`, "after-reset\n$"},
		{"line drawing and colours", `printf '\e(0lqk\e(B \e[7;33mrev\e[0m \e[4mul\e[0m\n'`, "┌─┐ rev ul\n$"},
		{"moving down past a small region", `printf '\e[1;5r\e[20;1H\e[99Bdown\e[r\e[23;1H\n'`, "down\n$"},
		{"line feeds below a small region", `printf '\e[1;5r\e[23;1H\n\n\nbelow\e[r\e[23;1H\n'`, "below\n$"},
	}
	for _, st := range steps {
		o.Type(st.cmd + "\r")
		o.WaitText(st.shows)
		o.WaitBar("t1 | shared with 1")
		termtest.SameScreen(t, o, a)
		if r, _, _ := o.Cursor(); r >= 23 {
			t.Fatalf("after %s the cursor is on the bar row", st.what)
		}
	}

	// The bar drawn while a wrap is pending in the last column: the next
	// character still wraps, as without a bar.
	o.Type(`printf '%080d' 7; sleep 2; printf 'Z\n'` + "\r")
	o.WaitText(strings.Repeat("0", 79) + "7")
	a.Must("request_attention", map[string]any{"reason": "look"}, nil)
	o.WaitBar("asks for your attention: look")
	o.WaitText("Z\n$")
	s := strings.Join(o.Screen(), "\n")
	if !strings.Contains(s, strings.Repeat("0", 79)+"7\nZ") {
		t.Fatalf("the pending wrap was lost:\n%s", s)
	}
	termtest.SameScreen(t, o, a)
}

// The owner's window size is followed: the program gets it less the bar,
// and the bar moves to the new last row.
func TestResizeFollowsTheWindow(t *testing.T) {
	o, a := sharedShell(t)
	o.Type("seq 1 5\r")
	o.WaitText("5\n$")
	o.Resize(30, 100)
	o.WaitScreen("the bar on row 30", func(rows []string) bool {
		return len(rows) == 30 && strings.Contains(rows[29], "t1 | shared with 1")
	})
	o.Type("stty size\r")
	o.WaitText("29 100\n$")
	snap := termtest.SameScreen(t, o, a)
	if snap.Size.Rows != 29 || snap.Size.Cols != 100 {
		t.Fatalf("snapshot size %+v", snap.Size)
	}
	o.Resize(12, 60)
	o.WaitScreen("the bar on row 12", func(rows []string) bool {
		return len(rows) == 12 && strings.Contains(rows[11], "t1 | shared with 1")
	})
	o.Type("stty size\r")
	o.WaitText("11 60\n$")
	o.WaitBar("t1 | shared with 1")
	termtest.SameScreen(t, o, a)
}
