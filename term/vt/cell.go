package vt

// Color is a cell's foreground or background: the terminal's default, an
// entry of the 256-colour palette, or a 24-bit RGB value.
type Color uint32

const (
	paletteKind Color = 1 << 24
	rgbKind     Color = 2 << 24
	kindMask    Color = 3 << 24
)

// DefaultColor is the terminal's own colour (SGR 39 / 49).
const DefaultColor Color = 0

// Palette returns palette entry i (0–7 normal, 8–15 bright, 16–255 the
// extended cube and greys).
func Palette(i uint8) Color { return paletteKind | Color(i) }

// RGB returns a 24-bit colour.
func RGB(r, g, b uint8) Color { return rgbKind | Color(r)<<16 | Color(g)<<8 | Color(b) }

// IsDefault reports whether c is the terminal's default colour.
func (c Color) IsDefault() bool { return c&kindMask == 0 }

// Flags are a cell's rendition flags (SGR).
type Flags uint16

// Rendition flags.
const (
	Bold Flags = 1 << iota
	Faint
	Italic
	Underline
	Blink
	Reverse
	Conceal
	Strike
)

// Attr is a cell's rendition: colours and flags.
type Attr struct {
	Fg, Bg Color
	Flags  Flags
}

// Withheld reports whether text drawn with a is not meant to be read: it
// is concealed (SGR 8), or its foreground and background are both set
// explicitly to the same colour. Snapshots show such cells as blanks.
func (a Attr) Withheld() bool {
	return a.Flags&Conceal != 0 || !a.Fg.IsDefault() && a.Fg == a.Bg
}

// Cell is one position of the grid. A wide character fills two cells: the
// first holds it with Width 2, the second is its tail with Width 0.
type Cell struct {
	Rune  rune   // 0 for a blank
	Comb  string // combining characters that follow Rune
	Width uint8
	Attr  Attr
}

// blank returns an erased cell, which keeps the background of the pen that
// erased it (background colour erase, as xterm does).
func blank(pen Attr) Cell { return Cell{Width: 1, Attr: Attr{Bg: pen.Bg}} }

// Text returns what the cell shows: "" for a wide character's tail, " " for
// a blank.
func (c Cell) Text() string {
	switch {
	case c.Width == 0:
		return ""
	case c.Rune == 0:
		return " "
	case c.Comb == "":
		return string(c.Rune)
	}
	return string(c.Rune) + c.Comb
}
