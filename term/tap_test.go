package term

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	cvt "github.com/charmbracelet/x/vt"

	"github.com/dsh-browser/broker/term/vt"
)

// TestSoftResetKeepsTheProgramsMargins: DECSTR and the output after it,
// in one write, reach the owner's terminal with the margins the grid has
// (the program's rows), so the two screens agree. The terminal here is an
// emulator of its own (charmbracelet's, which keeps the margins on DECSTR
// as some terminals do; xterm resets them to the whole screen, the bar row
// with it). Before, the margins were set again only when the bar was next
// drawn: TestTheBarNeverCorruptsTheScreen failed whenever its soft reset
// step came in one write, as on a loaded machine.
func TestSoftResetKeepsTheProgramsMargins(t *testing.T) {
	const rows, cols = 23, 80 // the program's; the terminal has the bar row more
	var seq strings.Builder
	for n := 500; n <= 540; n++ {
		fmt.Fprintf(&seq, "%d\r\n", n)
	}
	for _, tc := range []struct{ name, before string }{
		{"the cursor in place", "cleared\r\n\x1b[3;5r\x1b[2;3H"},
		{"a wrap pending", "\x1b[3;5r\x1b[10;1H" + strings.Repeat("x", cols)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grid := vt.New(rows, cols)
			owner := cvt.NewEmulator(cols, rows+1)
			owner.Write(fmt.Appendf(nil, "\x1b[1;%dr", rows)) // as drawing the bar leaves them
			var tap barTap
			out := grid.WriteTap([]byte(tc.before+"\x1b[!p"+seq.String()), &tap, nil)
			owner.Write(out)
			var shown []string
			for y := range rows {
				var b strings.Builder
				for x := range cols {
					if c := owner.CellAt(x, y); c != nil {
						b.WriteString(c.Content)
					}
				}
				shown = append(shown, strings.TrimRight(b.String(), " "))
			}
			if want := grid.Lines(false); !slices.Equal(shown, want) {
				t.Fatalf("the owner's terminal shows\n%s\nthe grid\n%s", strings.Join(shown, "\n"), strings.Join(want, "\n"))
			}
			if r, c, _ := grid.Cursor(); owner.CursorPosition().Y != r || owner.CursorPosition().X != c {
				t.Fatalf("cursor: terminal %v, grid %d,%d", owner.CursorPosition(), r, c)
			}
		})
	}
}
