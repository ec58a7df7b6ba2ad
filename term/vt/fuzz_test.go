package vt_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/dsh-browser/broker/term/vt"
)

// FuzzScreen feeds arbitrary output: the grid stays well formed (the cursor
// in bounds, every wide character whole) and splitting the input anywhere
// gives the same screen.
func FuzzScreen(f *testing.F) {
	for _, tc := range corpus {
		f.Add([]byte(tc.in), uint8(7), uint8(9))
	}
	f.Add([]byte("\x1b[?1049h\x1b[1;24r\x1b[24;1H\x1b[L漢\u0301\x1b[@"), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, r, c uint8) {
		rows, cols := int(r%30)+1, int(c%90)+1
		whole := vt.New(rows, cols)
		whole.Write(in)
		checkGrid(t, whole)
		half := vt.New(rows, cols)
		cut := len(in) / 2
		half.Write(in[:cut])
		half.Write(in[cut:])
		if !slices.Equal(whole.Lines(false), half.Lines(false)) {
			t.Fatalf("split at %d changed the screen", cut)
		}
		wr, wc, wv := whole.Cursor()
		hr, hc, hv := half.Cursor()
		if wr != hr || wc != hc || wv != hv {
			t.Fatalf("split changed the cursor")
		}
		whole.Resize(rows/2+1, cols/2+1)
		checkGrid(t, whole)

		// A tap that changes nothing passes the output on exactly, split
		// anywhere; CAN ends whatever was held back.
		tapped := vt.New(rows, cols)
		out := tapped.WriteTap(in[:cut], passThrough{}, nil)
		out = tapped.WriteTap(append(in[cut:len(in):len(in)], 0x18), passThrough{}, out)
		if !bytes.Equal(out, append(in[:len(in):len(in)], 0x18)) || !tapped.Between() {
			t.Fatalf("a pass-through tap changed the output")
		}
	})
}

type passThrough struct{}

func (passThrough) Control(*vt.Screen, byte) []byte              { return nil }
func (passThrough) Escape(*vt.Screen, *vt.Parser, byte) []byte   { return nil }
func (passThrough) Sequence(*vt.Screen, *vt.Parser, byte) []byte { return nil }

func checkGrid(t *testing.T, s *vt.Screen) {
	t.Helper()
	rows, cols := s.Size()
	r, c, _ := s.Cursor()
	if r < 0 || r >= rows || c < 0 || c >= cols {
		t.Fatalf("cursor %d,%d outside %dx%d", r, c, rows, cols)
	}
	for y := range rows {
		for x := range cols {
			cell := s.Cell(y, x)
			switch cell.Width {
			case 2:
				if x+1 >= cols || s.Cell(y, x+1).Width != 0 {
					t.Fatalf("wide character at %d,%d without its tail", y, x)
				}
			case 0:
				if x == 0 || s.Cell(y, x-1).Width != 2 {
					t.Fatalf("tail at %d,%d without its head", y, x)
				}
			}
		}
	}
}

// FuzzParser checks the parser alone: it never panics, parameters stay in
// range, and it is at a boundary after a complete sequence and a newline.
func FuzzParser(f *testing.F) {
	for _, tc := range corpus {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var p vt.Parser
		h := &paramCheck{t: t}
		for _, b := range in {
			p.Advance(b, h)
		}
		// CAN aborts whatever was going on, and a newline is then a plain
		// control: the parser must be back between sequences.
		p.Advance(0x18, h)
		p.Advance('\n', h)
		if !p.AtBoundary() {
			t.Fatal("not at a boundary after CAN and LF")
		}
		if bytes.Contains(in, []byte{0}) && h.prints < 0 {
			t.Fatal("unreachable")
		}
	})
}

type paramCheck struct {
	t      *testing.T
	prints int
}

func (h *paramCheck) Print(r rune)   { h.prints++ }
func (h *paramCheck) Execute(b byte) {}
func (h *paramCheck) ESC(p *vt.Parser, final byte) {
	if len(p.Intermediates()) > 2 {
		h.t.Fatal("too many intermediates kept")
	}
}
func (h *paramCheck) OSC(data []byte) {
	if len(data) > vt.MaxOSC {
		h.t.Fatalf("OSC of %d bytes kept", len(data))
	}
}
func (h *paramCheck) CSI(p *vt.Parser, final byte) {
	if p.NumParams() > vt.MaxParams {
		h.t.Fatalf("%d params", p.NumParams())
	}
	for i := range p.NumParams() {
		if v := p.Param(i, 0); v < 0 || v > vt.MaxParamValue {
			h.t.Fatalf("param %d = %d", i, v)
		}
	}
}
