package term_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/term/agentapi"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/test/harness/termtest"
)

// The agent's snapshot is what the person sees, row for row, less the bar.
func TestSnapshotEqualsTheOwnersScreen(t *testing.T) {
	srv, path := termtest.StartServer(t, agentsock.Config{})
	o := termtest.StartOwner(t, termtest.OwnerConfig{Session: termtest.Shell(t), Server: srv})
	o.WaitText("$")
	o.Type("printf '\\e[1;31mred\\e[0m plain 漢字 wide\\n'; seq 1 30\r")
	o.WaitText("30\n$")

	a := termtest.Dial(t, path)
	termtest.Join(t, o, a, "checker")

	snap := termtest.Result[agentapi.Snapshot](t, a.Call("snapshot", nil))
	screen := o.Screen()
	if snap.Size.Rows != len(screen)-1 || snap.Size.Cols != 80 {
		t.Fatalf("snapshot size %+v, owner's screen %d rows", snap.Size, len(screen))
	}
	if !slices.Equal(snap.Screen, screen[:len(screen)-1]) {
		t.Fatalf("snapshot:\n%s\nowner:\n%s", strings.Join(snap.Screen, "\n"), strings.Join(screen, "\n"))
	}
	row, col, _ := o.Cursor()
	if snap.Cursor == nil || snap.Cursor.Row != row || snap.Cursor.Col != col {
		t.Fatalf("snapshot cursor %+v, owner's %d,%d", snap.Cursor, row, col)
	}
	o.WaitBar("shared with 1")
}
