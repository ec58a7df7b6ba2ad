package term

import (
	"fmt"
	"strings"

	"github.com/dsh-browser/broker/term/vt"
)

// maxHeld bounds an unfinished sequence held back from the owner's
// terminal; a longer one (a huge OSC or DCS) is passed on as it comes.
const maxHeld = 4096

// outFilter passes the program's output to the owner's terminal with the
// last row reserved for the owner bar. It changes one thing: a scroll
// region (DECSTBM) is clamped to the program's rows, so the terminal never
// scrolls the bar. It notes what else reaches the bar row (erasing the
// display, a reset, the alternate screen, DECALN) so the bar is drawn
// again, and it holds back an unfinished sequence, so that the bar is only
// ever drawn between two whole sequences.
type outFilter struct {
	p         vt.Parser
	rows      int    // the program's rows: the owner's rows minus the bar
	seq       []byte // the sequence being read
	replace   []byte // what to write instead of seq, when it ends
	passedOn  bool   // part of seq was written already (it was too long)
	clobbered bool   // something may have drawn over the bar
	region    bool   // the terminal's scroll region may have been reset
}

// write filters a chunk of output and appends what to send to dst.
func (f *outFilter) write(dst, chunk []byte) []byte {
	for _, b := range chunk {
		f.seq = append(f.seq, b)
		f.p.Advance(b, f)
		switch {
		case f.p.AtBoundary():
			if f.replace != nil {
				dst = append(dst, f.replace...)
			} else {
				dst = append(dst, f.seq...)
			}
			f.seq, f.replace, f.passedOn = f.seq[:0], nil, false
		case len(f.seq) >= maxHeld:
			dst = append(dst, f.seq...)
			f.seq, f.passedOn = f.seq[:0], true
		}
	}
	return dst
}

// idle reports whether the owner's terminal is between sequences, where
// the bar may be drawn.
func (f *outFilter) idle() bool { return len(f.seq) == 0 && !f.passedOn && f.p.AtBoundary() }

// Print implements [vt.Handler].
func (f *outFilter) Print(rune) {}

// Execute implements [vt.Handler].
func (f *outFilter) Execute(byte) {}

// OSC implements [vt.Handler].
func (f *outFilter) OSC([]byte) {}

// ESC implements [vt.Handler].
func (f *outFilter) ESC(p *vt.Parser, final byte) {
	in := p.Intermediates()
	switch {
	case len(in) == 0 && final == 'c': // RIS
		f.clobbered, f.region = true, true
	case len(in) == 1 && in[0] == '#' && final == '8': // DECALN
		f.clobbered, f.region = true, true
	}
}

// CSI implements [vt.Handler].
func (f *outFilter) CSI(p *vt.Parser, final byte) {
	in := p.Intermediates()
	switch {
	case len(in) == 1 && in[0] == '!' && final == 'p': // DECSTR resets the margins
		f.region = true
	case len(in) > 0:
	case p.Private() == '?' && (final == 'h' || final == 'l'):
		for i := range max(p.NumParams(), 1) {
			switch p.Param(i, 0) {
			case 47, 1047, 1049:
				f.clobbered, f.region = true, true
			}
		}
	case p.Private() != 0:
	case final == 'J' && p.Param(0, 0) != 1 && p.Param(0, 0) != 3:
		f.clobbered = true
	case final == 'r':
		top, bot := p.Param(0, 1), p.Param(1, f.rows)
		if top == 0 {
			top = 1
		}
		if bot == 0 || bot > f.rows {
			bot = f.rows
		}
		f.replace = fmt.Appendf(nil, "\x1b[%d;%dr", top, bot)
	}
}

// barSequence draws the bar on the last of rows and puts everything the
// program relies on back as d describes it: cursor (with a pending wrap),
// pen, character sets, insert and origin modes, and, if region is set,
// the scroll region.
func barSequence(d vt.DrawState, rows int, bar string, region bool) []byte {
	var b strings.Builder
	if !d.CursorHidden {
		b.WriteString("\x1b[?25l")
	}
	if region {
		fmt.Fprintf(&b, "\x1b[%d;%dr", d.Top+1, d.Bottom+1)
	}
	if d.Origin {
		b.WriteString("\x1b[?6l")
	}
	if d.Insert {
		b.WriteString("\x1b[4l")
	}
	if d.ShiftOut {
		b.WriteByte(0x0f)
	}
	if d.G0DEC {
		b.WriteString("\x1b(B")
	}
	fmt.Fprintf(&b, "\x1b[%d;1H\x1b[0;7m%s\x1b[0m", rows, bar)

	row := d.Row + 1
	if d.Origin {
		b.WriteString("\x1b[?6h")
		row = d.Row - d.Top + 1
	}
	if d.WrapPending {
		// Reprinting the last character puts the cursor back in the last
		// column with the wrap pending.
		col, text := d.Col, d.Last.Text()
		if d.Last.Width == 0 && col > 0 {
			col-- // the tail of a wide character: reprint its head
		}
		fmt.Fprintf(&b, "\x1b[%d;%dH%s%s", row, col+1, d.Last.Attr.SGR(), text)
	} else {
		fmt.Fprintf(&b, "\x1b[%d;%dH", row, d.Col+1)
	}
	b.WriteString(d.Pen.SGR())
	if d.G0DEC {
		b.WriteString("\x1b(0")
	}
	if d.ShiftOut {
		b.WriteByte(0x0e)
	}
	if d.Insert {
		b.WriteString("\x1b[4h")
	}
	if !d.CursorHidden {
		b.WriteString("\x1b[?25h")
	}
	return []byte(b.String())
}

// repaint draws the program's whole grid from scratch (after a resize,
// when the owner's terminal may have moved things), then the bar.
func repaint(grid func(row, col int) vt.Cell, d vt.DrawState, rows, cols int, bar string) []byte {
	var b strings.Builder
	b.WriteString("\x1b[?25l\x1b[0m\x1b(B\x0f\x1b[4l\x1b[?6l")
	fmt.Fprintf(&b, "\x1b[1;%dr\x1b[H\x1b[2J", rows-1)
	for r := range rows - 1 {
		fmt.Fprintf(&b, "\x1b[%d;1H", r+1)
		var pen vt.Attr
		for c := range cols {
			cell := grid(r, c)
			if cell.Width == 0 {
				continue
			}
			if cell.Attr != pen {
				b.WriteString(cell.Attr.SGR())
				pen = cell.Attr
			}
			b.WriteString(cell.Text())
		}
		b.WriteString("\x1b[0m")
	}
	b.Write(barSequence(d, rows, bar, true))
	if !d.CursorHidden {
		b.WriteString("\x1b[?25h")
	}
	return []byte(b.String())
}
