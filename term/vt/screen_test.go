package vt_test

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	cvt "github.com/charmbracelet/x/vt"

	"github.com/dsh-browser/broker/term/vt"
)

// corpus is output of the kinds shells and full-screen programs write.
// Each case is checked against an independent emulator.
var corpus = []struct {
	name string
	in   string
	// xterm is the screen xterm shows where the reference emulator is known
	// to show something else (it lacks the feature or gets it wrong);
	// those rows are checked against this instead.
	xterm []string
}{
	{"text", "hello, world\r\nsecond line", nil},
	{"wrap", strings.Repeat("abcdefghij", 9) + "!", nil},
	{"wrap pending then CR", strings.Repeat("x", 20) + "\rY", nil},
	{"scroll past bottom", strings.Repeat("line\r\n", 30) + "last", nil},
	{"cup and erase", "aaaaaaaaaa\r\nbbbbbbbbbb\r\ncccccccccc\x1b[2;5H\x1b[K\x1b[1;3H\x1b[1K\x1b[3;1H\x1b[0J", nil},
	{"erase display all", "xxxx\r\nyyyy\x1b[2J\x1b[Hz", nil},
	{"erase above", "1111\r\n2222\r\n3333\x1b[2;2H\x1b[1J", []string{"", "  22", "3333"}},
	{"scroll region", "\x1b[2;4r\x1b[4;1Ha\nb\nc\nd\x1b[r\x1b[6;1Hend", nil},
	{"reverse index at top", "top\x1b[2;5r\x1b[2;1Hx\x1bMy\x1bMz", nil},
	{"insert delete lines", "1\r\n2\r\n3\r\n4\r\n5\x1b[2;1H\x1b[2L\x1b[5;1H\x1b[M", nil},
	{"insert delete chars", "abcdefgh\x1b[1;3H\x1b[2@XY\x1b[1;1H\x1b[3P", nil},
	{"erase chars", "abcdefgh\x1b[1;2H\x1b[3X", nil},
	{"alternate screen", "main text\x1b[?1049h\x1b[Halt text\x1b[5;5Hmore", nil},
	{"alternate and back", "main text\x1b[?1049h\x1b[Halt text\x1b[?1049lafter", nil},
	{"wide chars", "漢字かな\r\nab漢c", nil},
	{"wide at last column", strings.Repeat("a", 19) + "漢字", []string{strings.Repeat("a", 19), "漢字"}},
	{"overwrite half a wide char", "漢字\x1b[1;2Hx", nil},
	{"combining", "e\u0301a\u0308 done", nil},
	{"dec graphics", "\x1b(0lqqk\r\nx  x\r\nmqqj\x1b(B ok", nil},
	{"shift out", "\x1b)0a\x0eqqq\x0fb", []string{"a───b"}},
	{"tabs", "a\tb\tc\r\n\x1b[3g\x1b[1;5H\x1bH\r\tX", nil},
	{"sgr colours", "\x1b[1;31mred\x1b[0m \x1b[38;5;200mpink\x1b[38;2;1;2;3mrgb\x1b[m plain", nil},
	{"origin mode", "\x1b[3;5r\x1b[?6h\x1b[1;1Ho\x1b[10;1Hp\x1b[?6l\x1b[r", nil},
	{"save restore", "ab\x1b7\x1b[5;5Hcd\x1b8ef", nil},
	{"csi s u", "ab\x1b[s\x1b[5;5Hcd\x1b[uef", []string{"abef", "", "", "", "    cd"}},
	{"rep", "x\x1b[4b", nil},
	{"insert mode", "abcd\x1b[1;2H\x1b[4hXY\x1b[4l", []string{"aXYbcd"}},
	{"cursor moves", "\x1b[5;5H\x1b[2A\x1b[3C*\x1b[10D\x1b[1B#\x1b[3G@\x1b[2d!", nil},
	{"next and previous line", "\x1b[3;4Ha\x1b[Eb\x1b[2Fc", nil},
	{"scroll up down", "1\r\n2\r\n3\r\n4\x1b[2S\x1b[1T", nil},
	{"cursor hidden", "abc\x1b[?25l", nil},
	{"backspace", "abc\b\bX", nil},
	{"nul and bel ignored", "a\x00b\x07c", nil},
	{"osc title", "\x1b]0;title\x07after\x1b]2;t2\x1b\\ok", nil},
	{"dcs ignored", "a\x1bP1$r0m\x1b\\b", nil},
	{"can aborts", "a\x1b[3\x18b", nil},
	{"wrap at bottom scrolls", "\x1b[10;1H" + strings.Repeat("z", 25), nil},
	{"autowrap off", "\x1b[?7l" + strings.Repeat("q", 25) + "\x1b[?7h", nil},
	{"decaln", "\x1b#8", slices.Repeat([]string{strings.Repeat("E", cols)}, rows)},
	{"reset", "garbage\x1b[31m\x1bcclean", nil},
	{"soft reset resets the margins", "keep\x1b[3;4r\x1b[!p\x1b[10;1Hbottom\n", []string{"", "", "", "", "", "", "", "", "bottom", ""}},
	{"sub-params", "\x1b[38:2::10:20:30mx\x1b[4:3my\x1b[0m", nil},
	{"long params", "\x1b[" + strings.Repeat("1;", 40) + "mX\x1b[99999999Hend", nil},
}

const rows, cols = 10, 20

func TestAgreesWithAnIndependentEmulator(t *testing.T) {
	for _, tc := range corpus {
		t.Run(tc.name, func(t *testing.T) {
			ours := vt.New(rows, cols)
			ours.Write([]byte(tc.in))
			want, wantRow, wantCol, wantAlt := reference(tc.in, rows, cols)
			got := ours.Lines(false)
			if tc.xterm != nil {
				want = append(slices.Clone(tc.xterm), make([]string, rows-len(tc.xterm))...)
			}
			if diff := diffLines(got, want); diff != "" {
				t.Errorf("screen differs:\n%s", diff)
			}
			r, c, _ := ours.Cursor()
			if tc.xterm == nil && (r != wantRow || c != wantCol) {
				t.Errorf("cursor %d,%d, reference %d,%d", r, c, wantRow, wantCol)
			}
			if ours.AltScreen() != wantAlt {
				t.Errorf("alternate screen %v, reference %v", ours.AltScreen(), wantAlt)
			}
		})
	}
}

// The same text split at every byte gives the same screen.
func TestChunkingDoesNotMatter(t *testing.T) {
	for _, tc := range corpus {
		whole := vt.New(rows, cols)
		whole.Write([]byte(tc.in))
		want := whole.Lines(false)
		for cut := range len(tc.in) {
			s := vt.New(rows, cols)
			s.Write([]byte(tc.in[:cut]))
			s.Write([]byte(tc.in[cut:]))
			if diff := diffLines(s.Lines(false), want); diff != "" {
				t.Fatalf("%s cut at %d:\n%s", tc.name, cut, diff)
			}
		}
	}
}

func reference(in string, rows, cols int) (lines []string, row, col int, alt bool) {
	e := cvt.NewEmulator(cols, rows)
	go drain(e)
	defer e.InputPipe().(*io.PipeWriter).Close() // ends drain; Close races with Read
	e.Write([]byte(in))
	for y := range rows {
		var b strings.Builder
		for x := range cols {
			if c := e.CellAt(x, y); c != nil {
				b.WriteString(c.Content)
			}
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	p := e.CursorPosition()
	return lines, p.Y, p.X, e.IsAltScreen()
}

// drain reads an emulator's replies (it writes them to a pipe that would
// otherwise block it).
func drain(e *cvt.Emulator) {
	buf := make([]byte, 256)
	for {
		if _, err := e.Read(buf); err != nil {
			return
		}
	}
}

func diffLines(got, want []string) string {
	var b strings.Builder
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			fmt.Fprintf(&b, "row %d: got %q\n        want %q\n", i, g, w)
		}
	}
	return b.String()
}
