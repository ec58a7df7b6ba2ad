package vt_test

import (
	"testing"

	"github.com/dsh-browser/broker/term/vt"
)

func TestWithheldText(t *testing.T) {
	tests := []struct {
		name, in, shown string
		withholds       bool
	}{
		{"plain", "pass word", "pass word", false},
		{"concealed", "pw: \x1b[8msecret\x1b[28m ok", "pw:        ok", true},
		{"black on black", "a\x1b[30;40mhidden\x1b[0mb", "a      b", true},
		{"palette forms agree", "a\x1b[38;5;1;41mhidden\x1b[0mb", "a      b", true},
		{"bright on bright", "a\x1b[91;101mhidden\x1b[0mb", "a      b", true},
		{"same rgb", "a\x1b[38;2;9;9;9;48;2;9;9;9mhidden\x1b[0mb", "a      b", true},
		{"reverse keeps them equal", "a\x1b[7;32;42mhidden\x1b[0mb", "a      b", true},
		{"different colours", "a\x1b[31;42mshown\x1b[0mb", "ashownb", false},
		{"only foreground set", "a\x1b[30mshown\x1b[0mb", "ashownb", false},
		{"default on default", "a\x1b[39;49mshown\x1b[0mb", "ashownb", false},
		{"palette and rgb are not compared", "a\x1b[31;48;2;205;0;0mshown\x1b[0mb", "ashownb", false},
		{"wide concealed keeps its columns", "\x1b[8m漢\x1b[0mx", "  x", true},
		{"erased cells are not text", "\x1b[30;40m\x1b[K\x1b[0mx", "x", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := vt.New(3, 30)
			s.Write([]byte(tc.in))
			if got := s.Line(0, true); got != tc.shown {
				t.Errorf("withheld line %q, want %q", got, tc.shown)
			}
			if got := s.Withholds(0); got != tc.withholds {
				t.Errorf("Withholds = %v, want %v", got, tc.withholds)
			}
		})
	}
}

func TestRevisionCountsVisibleChanges(t *testing.T) {
	s := vt.New(5, 10)
	r0 := s.Revision()
	s.Write([]byte("\x1b[31m")) // a pen change shows nothing
	if s.Revision() != r0 {
		t.Fatalf("SGR alone moved the revision")
	}
	s.Write([]byte("x"))
	r1 := s.Revision()
	if r1 == r0 {
		t.Fatal("text did not move the revision")
	}
	s.Write([]byte("\x1b[3;3H"))
	if s.Revision() == r1 {
		t.Fatal("a cursor move did not move the revision")
	}
	r2 := s.Revision()
	s.Write([]byte("\x1b[?1049h"))
	if s.Revision() == r2 || !s.AltScreen() {
		t.Fatal("the alternate screen did not move the revision")
	}
}

func TestResizeKeepsTheCursorRowInView(t *testing.T) {
	s := vt.New(5, 10)
	s.Write([]byte("1\r\n2\r\n3\r\n4\r\n5"))
	s.Resize(3, 4)
	want := []string{"3", "4", "5"}
	for i, w := range want {
		if got := s.Line(i, false); got != w {
			t.Fatalf("row %d %q, want %q", i, got, w)
		}
	}
	if r, c, _ := s.Cursor(); r != 2 || c != 1 {
		t.Fatalf("cursor %d,%d", r, c)
	}
	s.Write([]byte("\x1b[H漢字xyz")) // a wide character cut by a later shrink
	s.Resize(3, 3)
	if got := s.Line(0, false); got != "漢" {
		t.Fatalf("row 0 after cutting a wide char: %q", got)
	}
}

func TestDrawStateReportsWhatMustBeRestored(t *testing.T) {
	s := vt.New(4, 5)
	s.Write([]byte("\x1b[2;3r\x1b[?6h\x1b[4h\x1b[1;33m\x1b(0\x1b)0\x0e\x1b[?25l\x1b[2;1HABCDE"))
	d := s.DrawState()
	if !d.Origin || !d.Insert || !d.CursorHidden || !d.G0DEC || !d.G1DEC || !d.ShiftOut {
		t.Fatalf("modes not reported: %+v", d)
	}
	if d.Top != 1 || d.Bottom != 2 {
		t.Fatalf("region %d..%d", d.Top, d.Bottom)
	}
	if d.Row != 2 || d.Col != 4 || !d.WrapPending || d.Last.Rune != 'E' {
		t.Fatalf("cursor %+v", d)
	}
	if d.Pen.Flags&vt.Bold == 0 || d.Pen.Fg != vt.Palette(3) {
		t.Fatalf("pen %+v", d.Pen)
	}
	if got := d.Pen.SGR(); got != "\x1b[0;1;38;5;3m" {
		t.Fatalf("SGR %q", got)
	}
}

func TestCursorKeysModeAndVisibility(t *testing.T) {
	s := vt.New(4, 5)
	s.Write([]byte("\x1b[?1h\x1b[?25l"))
	if !s.AppCursorKeys() {
		t.Fatal("DECCKM not seen")
	}
	if _, _, visible := s.Cursor(); visible {
		t.Fatal("cursor still visible")
	}
	s.Write([]byte("\x1b[?1l\x1b[?25h"))
	if _, _, visible := s.Cursor(); s.AppCursorKeys() || !visible {
		t.Fatal("modes not reset")
	}
}
