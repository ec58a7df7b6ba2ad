// Package vt keeps a terminal's screen grid from the output of the program
// running in it: a small VT100/xterm emulator without scrollback.
//
// [Screen] understands what shells and full-screen programs such as vi and
// less use: cursor movement and visibility, scroll regions, insert and
// delete of lines and characters, erasing, the alternate screen, DEC line
// drawing, SGR renditions with 256 and 24-bit colours (so that concealed
// text and text drawn in its own background colour can be withheld, see
// [Attr.Withheld]) and wide characters. Queries are not answered: the
// terminal the person looks at answers them.
//
// [Parser] is the byte-level state machine underneath; it can be used on
// its own to find sequence boundaries in a stream.
package vt

import (
	"strings"
)

type charset uint8

const (
	charsetASCII charset = iota
	charsetDEC           // DEC special graphics (line drawing)
)

// cursor is the cursor and everything DECSC saves with it.
type cursor struct {
	row, col int
	wrap     bool // a character was written in the last column: the next one wraps first
	pen      Attr
	origin   bool // DECOM: rows count from the scroll region's top
	g        [2]charset
	gl       int // which of g is shifted in (SI 0, SO 1)
}

// Screen is a terminal's grid. It is not safe for concurrent use.
type Screen struct {
	p Parser

	rows, cols int
	main, alt  [][]Cell
	alternate  bool

	cur          cursor
	savedMain    cursor
	savedAlt     cursor
	top, bot     int // scroll region, inclusive rows
	autowrap     bool
	insert       bool
	newline      bool // LNM: LF also returns the carriage
	cursorHidden bool
	appCursor    bool // DECCKM: cursor keys send SS3
	tabs         []bool
	last         rune // the last character printed, for REP
	changed      bool
	revision     uint64

	// While WriteTap runs: the tap, the token being read, and what to pass
	// on in its place.
	tap      Tap
	tok      []byte
	repl     []byte
	replaced bool
	passedOn bool // part of the token was passed on already (it was too long)
}

// New returns a blank screen of the given size (at least 1×1).
func New(rows, cols int) *Screen {
	s := &Screen{}
	s.reset(max(rows, 1), max(cols, 1))
	s.changed = false
	return s
}

func (s *Screen) reset(rows, cols int) {
	s.rows, s.cols = rows, cols
	s.main = newGrid(rows, cols)
	s.alt = newGrid(rows, cols)
	s.alternate = false
	s.cur = cursor{}
	s.savedMain, s.savedAlt = cursor{}, cursor{}
	s.top, s.bot = 0, rows-1
	s.autowrap = true
	s.insert, s.newline, s.cursorHidden, s.appCursor = false, false, false, false
	s.tabs = defaultTabs(cols)
	s.last = 0
	s.changed = true
}

func newGrid(rows, cols int) [][]Cell {
	g := make([][]Cell, rows)
	for i := range g {
		g[i] = newLine(cols, Attr{})
	}
	return g
}

func newLine(cols int, pen Attr) []Cell {
	l := make([]Cell, cols)
	b := blank(pen)
	for i := range l {
		l[i] = b
	}
	return l
}

func defaultTabs(cols int) []bool {
	t := make([]bool, cols)
	for i := 8; i < cols; i += 8 {
		t[i] = true
	}
	return t
}

func (s *Screen) grid() [][]Cell {
	if s.alternate {
		return s.alt
	}
	return s.main
}

// Write feeds program output to the screen. It never fails.
func (s *Screen) Write(b []byte) (int, error) {
	for _, c := range b {
		s.p.Advance(c, s)
	}
	if s.changed {
		s.revision++
		s.changed = false
	}
	return len(b), nil
}

// Tap watches output token by token as [Screen.WriteTap] applies it, and
// may pass something else on in a token's place. Each method is called with
// the screen as it is before the token applies, and returns the bytes to
// pass on instead of the token, or nil to pass it unchanged.
type Tap interface {
	Control(s *Screen, b byte) []byte                 // a C0 control between sequences
	Escape(s *Screen, p *Parser, final byte) []byte   // an escape sequence
	Sequence(s *Screen, p *Parser, final byte) []byte // a control sequence (CSI)
}

// MaxHeld bounds the unfinished token WriteTap holds back; a longer one (a
// huge OSC or DCS string) is passed on as it comes.
const MaxHeld = 4096

// WriteTap applies output like [Screen.Write] and appends to out what to
// pass on to a terminal showing the same screen: each whole token, or
// what tap returned in its place. An unfinished token at the end is held
// back until a later call completes it, so out always ends between tokens
// (see [Screen.Between]).
func (s *Screen) WriteTap(b []byte, tap Tap, out []byte) []byte {
	s.tap = tap
	for _, c := range b {
		s.tok = append(s.tok, c)
		s.p.Advance(c, s)
		switch {
		case s.p.AtBoundary():
			if s.replaced {
				out = append(out, s.repl...)
			} else {
				out = append(out, s.tok...)
			}
			s.tok, s.repl, s.replaced, s.passedOn = s.tok[:0], nil, false, false
		case len(s.tok) >= MaxHeld:
			out = append(out, s.tok...)
			s.tok, s.passedOn = s.tok[:0], true
		}
	}
	s.tap = nil
	if s.changed {
		s.revision++
		s.changed = false
	}
	return out
}

// Between reports whether what WriteTap passed on ends between two tokens,
// so that a terminal receiving it can be written to without breaking one.
func (s *Screen) Between() bool { return len(s.tok) == 0 && !s.passedOn && s.p.AtBoundary() }

func (s *Screen) replace(b []byte) {
	if b != nil {
		s.repl, s.replaced = b, true
	}
}

// Size returns the grid's rows and columns.
func (s *Screen) Size() (rows, cols int) { return s.rows, s.cols }

// Cursor returns the cursor's row and column (0-based) and whether it is
// shown.
func (s *Screen) Cursor() (row, col int, visible bool) {
	return s.cur.row, s.cur.col, !s.cursorHidden
}

// AltScreen reports whether the alternate screen is shown.
func (s *Screen) AltScreen() bool { return s.alternate }

// AppCursorKeys reports whether cursor keys should send SS3 sequences
// (DECCKM), as full-screen programs ask.
func (s *Screen) AppCursorKeys() bool { return s.appCursor }

// Revision counts the writes that changed the text, the cursor or which
// screen is shown.
func (s *Screen) Revision() uint64 { return s.revision }

// Cell returns the cell at row, col of the screen shown.
func (s *Screen) Cell(row, col int) Cell { return s.grid()[row][col] }

// Line returns the text of one row with trailing blanks removed. With
// withhold, cells whose rendition is [Attr.Withheld] read as blanks.
func (s *Screen) Line(row int, withhold bool) string {
	var b strings.Builder
	b.Grow(s.cols)
	for _, c := range s.grid()[row] {
		switch {
		case c.Width == 0:
		case c.Rune == 0 || withhold && c.Attr.Withheld():
			for range c.Width {
				b.WriteByte(' ')
			}
		default:
			b.WriteRune(c.Rune)
			b.WriteString(c.Comb)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// Lines returns every row as [Screen.Line] does.
func (s *Screen) Lines(withhold bool) []string {
	out := make([]string, s.rows)
	for i := range out {
		out[i] = s.Line(i, withhold)
	}
	return out
}

// Withholds reports whether a row shows text that [Screen.Line] withholds.
func (s *Screen) Withholds(row int) bool {
	for _, c := range s.grid()[row] {
		if c.Width > 0 && c.Rune != 0 && c.Attr.Withheld() {
			return true
		}
	}
	return false
}

// Resize changes the grid's size. Text keeps its place from the top left;
// when rows shrink above the cursor, the top rows go, so the cursor's row
// stays in view. The scroll region becomes the whole screen.
func (s *Screen) Resize(rows, cols int) {
	rows, cols = max(rows, 1), max(cols, 1)
	if rows == s.rows && cols == s.cols {
		return
	}
	drop := max(s.cur.row-rows+1, 0)
	s.main = resizeGrid(s.main, rows, cols, drop)
	s.alt = resizeGrid(s.alt, rows, cols, drop)
	s.rows, s.cols = rows, cols
	s.cur.row = clamp(s.cur.row-drop, 0, rows-1)
	s.cur.col = clamp(s.cur.col, 0, cols-1)
	s.cur.wrap = false
	for _, sv := range []*cursor{&s.savedMain, &s.savedAlt} {
		sv.row, sv.col = clamp(sv.row-drop, 0, rows-1), clamp(sv.col, 0, cols-1)
	}
	s.top, s.bot = 0, rows-1
	tabs := defaultTabs(cols)
	copy(tabs, s.tabs)
	s.tabs = tabs
	s.revision++
}

func resizeGrid(g [][]Cell, rows, cols, drop int) [][]Cell {
	g = g[drop:]
	out := make([][]Cell, rows)
	for i := range out {
		l := newLine(cols, Attr{})
		if i < len(g) {
			copy(l, g[i])
			fixLine(l) // a wide character cut in half
		}
		out[i] = l
	}
	return out
}

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }

// --- Handler ---

// Print implements [Handler].
func (s *Screen) Print(r rune) {
	if s.cur.g[s.cur.gl] == charsetDEC && r >= 0x5F && r <= 0x7E {
		r = decGraphics[r-0x5F]
	}
	w := RuneWidth(r)
	if w == 0 {
		s.combine(r)
		return
	}
	s.put(r, w)
	s.last = r
}

// combine attaches a zero-width character to the character before the
// cursor.
func (s *Screen) combine(r rune) {
	row, col := s.cur.row, s.cur.col
	if !s.cur.wrap {
		col--
	}
	line := s.grid()[row]
	if col >= 0 && line[col].Width == 0 && col > 0 {
		col-- // the tail of a wide character: join its head
	}
	if col < 0 || line[col].Rune == 0 {
		return // nothing to join
	}
	if len(line[col].Comb) < 32 {
		line[col].Comb += string(r)
		s.changed = true
	}
}

func (s *Screen) put(r rune, w int) {
	if w > s.cols {
		return
	}
	if s.cur.wrap && s.autowrap {
		s.cur.col = 0
		s.lineFeed()
	}
	s.cur.wrap = false
	if s.cur.col+w > s.cols {
		if s.autowrap { // a wide character that does not fit goes to the next line
			s.cur.col = 0
			s.lineFeed()
		} else {
			s.cur.col = s.cols - w
		}
	}
	line := s.grid()[s.cur.row]
	if s.insert {
		s.shiftRight(line, s.cur.col, w)
	}
	line[s.cur.col] = Cell{Rune: r, Width: uint8(w), Attr: s.cur.pen}
	if w == 2 {
		line[s.cur.col+1] = Cell{Width: 0, Attr: s.cur.pen}
	}
	fixAround(line, s.cur.col, s.cur.col+w)
	s.changed = true
	if s.cur.col+w >= s.cols {
		s.cur.col = s.cols - 1
		s.cur.wrap = s.autowrap
		return
	}
	s.cur.col += w
}

// fixAround blanks what is left of wide characters that were cut when
// cells from..to-1 were overwritten.
func fixAround(line []Cell, from, to int) {
	if from > 0 && line[from-1].Width == 2 {
		line[from-1] = blank(line[from-1].Attr)
	}
	if to < len(line) && line[to].Width == 0 {
		line[to] = blank(line[to].Attr)
	}
}

// fixLine blanks every half of a wide character whose other half is gone.
func fixLine(line []Cell) {
	for i := range line {
		switch line[i].Width {
		case 2:
			if i+1 >= len(line) || line[i+1].Width != 0 {
				line[i] = blank(line[i].Attr)
			}
		case 0:
			if i == 0 || line[i-1].Width != 2 {
				line[i] = blank(line[i].Attr)
			}
		}
	}
}

func (s *Screen) shiftRight(line []Cell, col, n int) {
	if n <= 0 {
		return
	}
	copy(line[min(col+n, len(line)):], line[col:])
	for i := col; i < min(col+n, len(line)); i++ {
		line[i] = blank(s.cur.pen)
	}
	fixLine(line)
}

// Execute implements [Handler].
func (s *Screen) Execute(b byte) {
	if s.tap != nil && s.p.AtBoundary() {
		s.replace(s.tap.Control(s, b))
	}
	switch b {
	case '\b':
		if s.cur.col > 0 {
			s.cur.col--
		}
		s.cur.wrap = false
	case '\t':
		s.tab(1)
	case '\n', '\v', '\f':
		s.lineFeed()
		if s.newline {
			s.cur.col = 0
		}
		s.cur.wrap = false
	case '\r':
		s.cur.col = 0
		s.cur.wrap = false
	case 0x0E: // SO
		s.cur.gl = 1
	case 0x0F: // SI
		s.cur.gl = 0
	default:
		return // BEL, NUL and the rest change nothing shown
	}
	s.changed = true
}

func (s *Screen) tab(n int) {
	for ; n > 0; n-- {
		c := s.cur.col + 1
		for c < s.cols-1 && !s.tabs[c] {
			c++
		}
		s.cur.col = min(c, s.cols-1)
	}
	s.cur.wrap = false
}

func (s *Screen) backTab(n int) {
	for ; n > 0 && s.cur.col > 0; n-- {
		c := s.cur.col - 1
		for c > 0 && !s.tabs[c] {
			c--
		}
		s.cur.col = c
	}
	s.cur.wrap = false
}

// lineFeed moves down a row, scrolling the region when at its bottom.
func (s *Screen) lineFeed() {
	switch {
	case s.cur.row == s.bot:
		s.scrollUp(s.top, s.bot, 1)
	case s.cur.row < s.rows-1:
		s.cur.row++
	}
	s.changed = true
}

func (s *Screen) reverseIndex() {
	switch {
	case s.cur.row == s.top:
		s.scrollDown(s.top, s.bot, 1)
	case s.cur.row > 0:
		s.cur.row--
	}
	s.cur.wrap = false
	s.changed = true
}

// scrollUp moves rows top..bot up by n, blanking the bottom n.
func (s *Screen) scrollUp(top, bot, n int) {
	g := s.grid()
	n = min(n, bot-top+1)
	if n <= 0 {
		return
	}
	gone := make([][]Cell, n)
	copy(gone, g[top:top+n])
	copy(g[top:], g[top+n:bot+1])
	for i, l := range gone {
		fillLine(l, s.cur.pen)
		g[bot-n+1+i] = l
	}
	s.changed = true
}

// scrollDown moves rows top..bot down by n, blanking the top n.
func (s *Screen) scrollDown(top, bot, n int) {
	g := s.grid()
	n = min(n, bot-top+1)
	if n <= 0 {
		return
	}
	gone := make([][]Cell, n)
	copy(gone, g[bot-n+1:bot+1])
	copy(g[top+n:bot+1], g[top:bot-n+1])
	for i, l := range gone {
		fillLine(l, s.cur.pen)
		g[top+i] = l
	}
	s.changed = true
}

func fillLine(l []Cell, pen Attr) {
	b := blank(pen)
	for i := range l {
		l[i] = b
	}
}

// eraseCells blanks columns from..to-1 of a row.
func (s *Screen) eraseCells(row, from, to int) {
	line := s.grid()[row]
	from, to = clamp(from, 0, s.cols), clamp(to, 0, s.cols)
	if from >= to {
		return
	}
	b := blank(s.cur.pen)
	for i := from; i < to; i++ {
		line[i] = b
	}
	fixAround(line, from, to)
	s.changed = true
}

// ESC implements [Handler].
func (s *Screen) ESC(p *Parser, final byte) {
	if s.tap != nil {
		s.replace(s.tap.Escape(s, p, final))
	}
	in := p.Intermediates()
	if len(in) == 1 {
		switch in[0] {
		case '(', ')':
			g := 0
			if in[0] == ')' {
				g = 1
			}
			if final == '0' {
				s.cur.g[g] = charsetDEC
			} else {
				s.cur.g[g] = charsetASCII
			}
		case '#':
			if final == '8' {
				s.alignment()
			}
		}
		return
	}
	if len(in) > 0 {
		return
	}
	switch final {
	case 'D': // IND
		s.lineFeed()
		s.cur.wrap = false
	case 'E': // NEL
		s.lineFeed()
		s.cur.col = 0
		s.cur.wrap = false
	case 'H': // HTS
		s.tabs[s.cur.col] = true
	case 'M': // RI
		s.reverseIndex()
	case '7': // DECSC
		s.saveCursor()
	case '8': // DECRC
		s.restoreCursor()
	case 'c': // RIS
		s.reset(s.rows, s.cols)
	case '=':
	case '>':
		// DECKPAM/DECKPNM change the keypad only.
	}
}

// alignment is DECALN: the screen fills with E.
func (s *Screen) alignment() {
	for _, l := range s.grid() {
		for i := range l {
			l[i] = Cell{Rune: 'E', Width: 1}
		}
	}
	s.top, s.bot = 0, s.rows-1
	s.cur.row, s.cur.col, s.cur.wrap = 0, 0, false
	s.changed = true
}

func (s *Screen) saveCursor() {
	if s.alternate {
		s.savedAlt = s.cur
	} else {
		s.savedMain = s.cur
	}
}

func (s *Screen) restoreCursor() {
	c := s.savedMain
	if s.alternate {
		c = s.savedAlt
	}
	c.row, c.col = clamp(c.row, 0, s.rows-1), clamp(c.col, 0, s.cols-1)
	s.cur = c
	s.changed = true
}

// OSC implements [Handler]. Titles and other OSC strings are not kept:
// the grid is what a snapshot shows, and a title can carry anything.
func (s *Screen) OSC(data []byte) {}

// CSI implements [Handler].
func (s *Screen) CSI(p *Parser, final byte) {
	if s.tap != nil {
		s.replace(s.tap.Sequence(s, p, final))
	}
	if len(p.Intermediates()) > 0 {
		s.csiIntermediate(p, final)
		return
	}
	switch p.Private() {
	case '?':
		if final == 'h' || final == 'l' {
			for i := 0; i < max(p.NumParams(), 1); i++ {
				s.decMode(p.Param(i, 0), final == 'h')
			}
		}
		return
	case 0:
	default:
		return // '>' and '=' sequences ask for or set things not shown
	}
	n := max(p.Param(0, 1), 1) // a count: 0 means 1
	switch final {
	case '@': // ICH
		s.cur.wrap = false
		s.shiftRight(s.grid()[s.cur.row], s.cur.col, min(n, s.cols-s.cur.col))
		s.changed = true
	case 'A': // CUU
		s.moveRows(-n)
	case 'B', 'e': // CUD, VPR
		s.moveRows(n)
	case 'C', 'a': // CUF, HPR
		s.setCol(s.cur.col + n)
	case 'D': // CUB
		s.setCol(s.cur.col - n)
	case 'E': // CNL
		s.moveRows(n)
		s.setCol(0)
	case 'F': // CPL
		s.moveRows(-n)
		s.setCol(0)
	case 'G', '`': // CHA, HPA
		s.setCol(n - 1)
	case 'H', 'f': // CUP, HVP
		s.moveTo(p.Param(0, 1), p.Param(1, 1))
	case 'I': // CHT
		s.tab(n)
		s.changed = true
	case 'J':
		s.eraseDisplay(p.Param(0, 0))
	case 'K':
		s.eraseLine(p.Param(0, 0))
	case 'L': // IL
		if s.cur.row >= s.top && s.cur.row <= s.bot {
			s.scrollDown(s.cur.row, s.bot, n)
			s.cur.col, s.cur.wrap = 0, false
		}
	case 'M': // DL
		if s.cur.row >= s.top && s.cur.row <= s.bot {
			s.scrollUp(s.cur.row, s.bot, n)
			s.cur.col, s.cur.wrap = 0, false
		}
	case 'P': // DCH
		s.deleteChars(n)
	case 'S': // SU
		s.scrollUp(s.top, s.bot, n)
	case 'T': // SD
		if p.NumParams() <= 1 { // with more it is xterm's mouse tracking
			s.scrollDown(s.top, s.bot, n)
		}
	case 'X': // ECH
		s.cur.wrap = false
		s.eraseCells(s.cur.row, s.cur.col, s.cur.col+n)
	case 'Z': // CBT
		s.backTab(n)
		s.changed = true
	case 'b': // REP
		if s.last != 0 {
			for range min(n, s.rows*s.cols) {
				s.Print(s.last)
			}
		}
	case 'd': // VPA
		s.setRow(n - 1)
	case 'g': // TBC
		switch p.Param(0, 0) {
		case 0:
			s.tabs[s.cur.col] = false
		case 3:
			clear(s.tabs)
		}
	case 'h', 'l':
		for i := 0; i < max(p.NumParams(), 1); i++ {
			switch p.Param(i, 0) {
			case 4:
				s.insert = final == 'h'
			case 20:
				s.newline = final == 'h'
			}
		}
	case 'm':
		s.sgr(p)
	case 'r': // DECSTBM
		top, bot := p.Param(0, 1), p.Param(1, s.rows)
		if top == 0 {
			top = 1
		}
		if bot == 0 || bot > s.rows {
			bot = s.rows
		}
		if top < bot {
			s.top, s.bot = top-1, bot-1
			s.moveTo(1, 1)
		}
	case 's': // SCOSC
		s.saveCursor()
	case 'u': // SCORC
		s.restoreCursor()
	}
}

func (s *Screen) csiIntermediate(p *Parser, final byte) {
	in := p.Intermediates()
	if len(in) == 1 && in[0] == '!' && final == 'p' { // DECSTR
		s.insert, s.cur.origin, s.autowrap, s.cursorHidden, s.appCursor = false, false, true, false, false
		s.cur.pen = Attr{}
		s.cur.g, s.cur.gl = [2]charset{}, 0
		s.top, s.bot = 0, s.rows-1
		s.savedMain, s.savedAlt = cursor{}, cursor{}
		s.changed = true
	}
}

// decMode sets or resets a DEC private mode.
func (s *Screen) decMode(mode int, on bool) {
	switch mode {
	case 1:
		s.appCursor = on
	case 6: // DECOM
		s.cur.origin = on
		s.moveTo(1, 1)
	case 7:
		s.autowrap = on
		if !on {
			s.cur.wrap = false
		}
	case 25:
		s.cursorHidden = !on
		s.changed = true
	case 47, 1047:
		if on {
			s.enterAlt(false)
		} else {
			if mode == 1047 && s.alternate {
				s.clearGrid(s.alt)
			}
			s.leaveAlt()
		}
	case 1048:
		if on {
			s.saveCursor()
		} else {
			s.restoreCursor()
		}
	case 1049:
		if on {
			if !s.alternate {
				s.savedMain = s.cur
			}
			s.enterAlt(true)
		} else if s.alternate {
			s.leaveAlt()
			s.restoreCursor()
		}
	}
}

func (s *Screen) enterAlt(clearIt bool) {
	if s.alternate {
		if clearIt {
			s.clearGrid(s.alt)
		}
		return
	}
	s.alternate = true
	if clearIt {
		s.clearGrid(s.alt)
	}
	s.changed = true
}

func (s *Screen) leaveAlt() {
	if !s.alternate {
		return
	}
	s.alternate = false
	s.changed = true
}

func (s *Screen) clearGrid(g [][]Cell) {
	for _, l := range g {
		fillLine(l, s.cur.pen)
	}
	s.changed = true
}

// moveTo is CUP: 1-based row and column, relative to the scroll region in
// origin mode.
func (s *Screen) moveTo(row, col int) {
	row, col = max(row, 1)-1, max(col, 1)-1
	if s.cur.origin {
		row = clamp(row+s.top, s.top, s.bot)
	}
	s.cur.row = clamp(row, 0, s.rows-1)
	s.cur.col = clamp(col, 0, s.cols-1)
	s.cur.wrap = false
	s.changed = true
}

// moveRows moves the cursor up (n<0) or down, stopping at the scroll
// region's margin when it starts inside the region.
func (s *Screen) moveRows(n int) {
	lo, hi := 0, s.rows-1
	if s.cur.row >= s.top && s.cur.row <= s.bot {
		lo, hi = s.top, s.bot
	}
	s.cur.row = clamp(s.cur.row+n, lo, hi)
	s.cur.wrap = false
	s.changed = true
}

func (s *Screen) setRow(row int) {
	if s.cur.origin {
		row = clamp(row+s.top, s.top, s.bot)
	}
	s.cur.row = clamp(row, 0, s.rows-1)
	s.cur.wrap = false
	s.changed = true
}

func (s *Screen) setCol(col int) {
	s.cur.col = clamp(col, 0, s.cols-1)
	s.cur.wrap = false
	s.changed = true
}

func (s *Screen) eraseDisplay(mode int) {
	switch mode {
	case 0:
		s.eraseCells(s.cur.row, s.cur.col, s.cols)
		for r := s.cur.row + 1; r < s.rows; r++ {
			s.eraseCells(r, 0, s.cols)
		}
	case 1:
		for r := 0; r < s.cur.row; r++ {
			s.eraseCells(r, 0, s.cols)
		}
		s.eraseCells(s.cur.row, 0, s.cur.col+1)
	case 2:
		for r := range s.rows {
			s.eraseCells(r, 0, s.cols)
		}
	default:
		return // 3 erases scrollback, which is not kept
	}
	s.cur.wrap = false
}

func (s *Screen) eraseLine(mode int) {
	switch mode {
	case 0:
		s.eraseCells(s.cur.row, s.cur.col, s.cols)
	case 1:
		s.eraseCells(s.cur.row, 0, s.cur.col+1)
	case 2:
		s.eraseCells(s.cur.row, 0, s.cols)
	default:
		return
	}
	s.cur.wrap = false
}

func (s *Screen) deleteChars(n int) {
	line := s.grid()[s.cur.row]
	col := s.cur.col
	n = min(n, s.cols-col)
	copy(line[col:], line[col+n:])
	b := blank(s.cur.pen)
	for i := s.cols - n; i < s.cols; i++ {
		line[i] = b
	}
	fixLine(line)
	s.cur.wrap = false
	s.changed = true
}

// decGraphics maps 0x5F–0x7E in the DEC special graphics set.
var decGraphics = [...]rune{
	' ', '◆', '▒', '␉', '␌', '␍', '␊', '°', '±', '␤', '␋', '┘', '┐', '┌', '└', '┼',
	'⎺', '⎻', '─', '⎼', '⎽', '├', '┤', '┴', '┬', '│', '≤', '≥', 'π', '≠', '£', '·',
}

// DrawState is what a writer that draws outside the program's area (the
// owner bar on a reserved row) must put back afterwards, so the program's
// next bytes land as if nothing had been drawn.
type DrawState struct {
	Row, Col     int
	WrapPending  bool // the next character wraps first (reprint Last to restore it)
	Last         Cell // the cell under the cursor, for restoring WrapPending
	CursorHidden bool
	Origin       bool // DECOM is set
	Insert       bool // IRM is set
	Pen          Attr
	G0DEC, G1DEC bool // the character sets designated as DEC graphics
	ShiftOut     bool // G1 is shifted in (SO)
	Top, Bottom  int  // the scroll region, 0-based inclusive
	Between      bool // see [Screen.Between]
}

// DrawState returns the state [DrawState] describes.
func (s *Screen) DrawState() DrawState {
	return DrawState{
		Row: s.cur.row, Col: s.cur.col, WrapPending: s.cur.wrap,
		Last:         s.grid()[s.cur.row][s.cur.col],
		CursorHidden: s.cursorHidden, Origin: s.cur.origin, Insert: s.insert,
		Pen:   s.cur.pen,
		G0DEC: s.cur.g[0] == charsetDEC, G1DEC: s.cur.g[1] == charsetDEC, ShiftOut: s.cur.gl == 1,
		Top: s.top, Bottom: s.bot,
		Between: s.Between(),
	}
}
