package term_test

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/test/harness/termtest"
	"github.com/dsh-browser/broker/test/harness/testenv"
)

// `broker term` as a person uses it: started in their terminal, typed
// into, resized, shared, and exited, after which the terminal is as it
// was. No broker runs (its runtime directory is empty): it is a plain
// terminal, "local" in the bar.
func TestBrokerTermBinary(t *testing.T) {
	bin := filepath.Join(testenv.MustBinaries(t), "broker")
	sh := termtest.Shell(t)
	env := append(sh.Env, "DSH_RUNTIME_DIR="+testenv.ShortTempDir(t))
	tm := termtest.NewTerminal(t, 24, 80)
	before, err := unix.IoctlGetTermios(int(tm.Slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	p := termtest.StartProcess(t, tm, bin, env, sh.Dir, append([]string{"term", "--"}, sh.Command...)...)

	tm.WaitBar("local | private | copilot | control: you")
	tm.Type("echo typed-$((3*5))\r")
	tm.WaitText("typed-15\n$")

	tm.Resize(20, 70) // the kernel sends SIGWINCH
	tm.WaitScreen("the bar on row 20", func(rows []string) bool {
		return len(rows) == 20 && strings.Contains(rows[19], "local | private")
	})
	tm.Type("stty size\r")
	tm.WaitText("19 70\n$")

	tm.Action('s')
	tm.WaitBar("local | shared with 0")
	tm.Type("exit 7\r")
	if code := p.Wait(); code != 7 {
		t.Fatalf("broker term ended with %d, want the shell's exit status 7", code)
	}
	after, err := unix.IoctlGetTermios(int(tm.Slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Fatalf("terminal modes not restored: %+v, was %+v", after, before)
	}
	tm.WaitScreen("the bar to go", func(rows []string) bool {
		return !strings.Contains(strings.Join(rows, "\n"), "local |")
	})
	// The scroll region is the whole screen again: text reaches the last row.
	if !strings.Contains(string(tm.Received()), "\x1b[r") {
		t.Fatal("the scroll region was not reset")
	}
}
