package term

import (
	"fmt"
	"strings"

	"github.com/dsh-browser/broker/term/vt"
)

// barTap passes the program's output to the owner's terminal with the
// last row reserved for the owner bar. The program's grid has one row
// less than the terminal, so the tap rewrites only what the terminal would
// take to its last row where the grid stays on its own last row: a scroll
// region (DECSTBM) is clamped to the program's rows, an absolute row
// (CUP, HVP, VPA) beyond them is clamped, and a cursor move down (CUD,
// CNL, VPR) or line feed below the scroll region stops at the program's
// last row, and a soft reset (DECSTR) is followed by the program's
// margins (afterSoftReset). Everything else passes unchanged. It notes
// what else reaches the bar row (erasing the display, a reset, the
// alternate screen, DECALN) so that the bar is drawn again.
//
// One case is not caught: a character printed, with autowrap, in the last
// column of the program's last row while that row is below a scroll region
// wraps into the bar row on the owner's terminal (the grid stays put). The
// bar is drawn again at the end of that output, but the character is not
// where the grid has it until the program redraws.
//
// The tap runs while the session's grid applies output; its fields are
// guarded by the session's output lock.
type barTap struct {
	clobbered bool // something may have drawn over the bar
	region    bool // the terminal's scroll region may have been reset
	// saved is the cursor 1049 saved on entering the alternate screen,
	// where leaving it puts the cursor back.
	savedRow, savedCol int
}

// cup positions the terminal's cursor at a grid position, origin-aware.
func cup(d vt.DrawState, row, col int) []byte {
	if d.Origin {
		row -= d.Top
	}
	return fmt.Appendf(nil, "\x1b[%d;%dH", row+1, col+1)
}

// belowRegion reports whether the cursor is on the program's last row
// under the scroll region, where the grid does not scroll on a line feed
// but the owner's terminal would move into the bar.
func belowRegion(s *vt.Screen) bool {
	d := s.DrawState()
	rows, _ := s.Size()
	return d.Row == rows-1 && d.Row > d.Bottom
}

// Control implements [vt.Tap].
func (t *barTap) Control(s *vt.Screen, b byte) []byte {
	if (b == '\n' || b == '\v' || b == '\f') && belowRegion(s) {
		return []byte{}
	}
	return nil
}

// Escape implements [vt.Tap].
func (t *barTap) Escape(s *vt.Screen, p *vt.Parser, final byte) []byte {
	in := p.Intermediates()
	switch {
	case len(in) == 0 && final == 'c': // RIS
		t.clobbered, t.region = true, true
	case len(in) == 1 && in[0] == '#' && final == '8': // DECALN
		t.clobbered, t.region = true, true
	case len(in) == 0 && final == 'D' && belowRegion(s): // IND
		return []byte{}
	case len(in) == 0 && final == 'E' && belowRegion(s): // NEL
		return []byte{'\r'}
	}
	return nil
}

// Sequence implements [vt.Tap].
func (t *barTap) Sequence(s *vt.Screen, p *vt.Parser, final byte) []byte {
	in := p.Intermediates()
	rows, _ := s.Size()
	switch {
	case len(in) == 1 && in[0] == '!' && final == 'p': // DECSTR
		return afterSoftReset(s.DrawState(), rows)
	case len(in) > 0:
	case p.Private() == '?' && (final == 'h' || final == 'l'):
		// Terminals disagree on what switching screens does to the cursor
		// (xterm leaves it, others go home) and to the scroll region (some
		// keep one per screen): set both as the grid has them, right after
		// the switch.
		var after []byte
		d := s.DrawState()
		for i := range max(p.NumParams(), 1) {
			switch p.Param(i, 0) {
			case 47, 1047, 1049:
				t.clobbered, t.region = true, true
				row, col := d.Row, d.Col
				switch {
				case p.Param(i, 0) == 1049 && final == 'h' && !s.AltScreen():
					t.savedRow, t.savedCol = d.Row, d.Col
				case p.Param(i, 0) == 1049 && final == 'l' && s.AltScreen():
					row, col = t.savedRow, t.savedCol
				}
				after = append(fmt.Appendf(nil, "\x1b[%d;%dr", d.Top+1, d.Bottom+1), cup(d, row, col)...)
			}
		}
		if after != nil {
			return append(fmt.Appendf(nil, "\x1b[?%s%c", params(p), final), after...)
		}
	case p.Private() != 0:
	case final == 'J' && p.Param(0, 0) != 1 && p.Param(0, 0) != 3:
		t.clobbered = true
	case final == 'r':
		top, bot := p.Param(0, 1), p.Param(1, rows)
		if top == 0 {
			top = 1
		}
		if bot == 0 || bot > rows {
			bot = rows
		}
		return fmt.Appendf(nil, "\x1b[%d;%dr", top, bot)
	case (final == 'H' || final == 'f') && p.Param(0, 1) > rows && !s.DrawState().Origin:
		return fmt.Appendf(nil, "\x1b[%d;%d%c", rows, p.Param(1, 1), final)
	case final == 'd' && p.Param(0, 1) > rows && !s.DrawState().Origin:
		return fmt.Appendf(nil, "\x1b[%dd", rows)
	case final == 'B' || final == 'E' || final == 'e':
		d := s.DrawState()
		n := max(p.Param(0, 1), 1)
		if d.Row >= d.Top && d.Row <= d.Bottom || d.Row+n <= rows-1 {
			return nil // the region's margin, or the screen's, stops both alike
		}
		n = rows - 1 - d.Row
		switch {
		case n > 0:
			return fmt.Appendf(nil, "\x1b[%d%c", n, final)
		case final == 'E':
			return []byte{'\r'}
		}
		return []byte{}
	}
	return nil
}

// afterSoftReset is DECSTR as the owner's terminal must take it, d the
// grid's state before it: terminals disagree on its margins (xterm resets
// them to the whole screen, the bar row with it; others keep them), while
// the grid resets them to the program's rows. So the margins are set to
// the program's rows right after it, at once (not when the bar is next
// drawn: output after it in the same write would scroll by the wrong
// margins), and the cursor, which setting them moves home and DECSTR
// leaves, is put back, a pending wrap with it; DECSTR leaves origin mode
// off and the default pen.
func afterSoftReset(d vt.DrawState, rows int) []byte {
	return fmt.Appendf(nil, "\x1b[!p\x1b[1;%dr%s\x1b[0m", rows, cursorBack(d, d.Row+1))
}

// cursorBack puts the terminal's cursor where d has it, on the terminal's
// row (1-based, as origin mode counts it), a pending wrap with it: the
// last character is printed again, which leaves the cursor in the last
// column with the wrap pending (the pen is then the character's).
func cursorBack(d vt.DrawState, row int) string {
	if !d.WrapPending {
		return fmt.Sprintf("\x1b[%d;%dH", row, d.Col+1)
	}
	col, text := d.Col, d.Last.Text()
	if d.Last.Width == 0 && col > 0 {
		col-- // the tail of a wide character: reprint its head
	}
	return fmt.Sprintf("\x1b[%d;%dH%s%s", row, col+1, d.Last.Attr.SGR(), text)
}

// params writes a sequence's parameters back as they came (colons aside).
func params(p *vt.Parser) string {
	var b strings.Builder
	for i := range p.NumParams() {
		if i > 0 {
			b.WriteByte(';')
		}
		if v := p.Param(i, -1); v >= 0 {
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
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
	b.WriteString(cursorBack(d, row))
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
