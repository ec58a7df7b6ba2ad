package vt

import (
	"strconv"
	"strings"
)

// sgr applies Select Graphic Rendition parameters to the pen.
func (s *Screen) sgr(p *Parser) {
	pen := &s.cur.pen
	if p.NumParams() == 0 {
		*pen = Attr{}
		return
	}
	for i := 0; i < p.NumParams(); i++ {
		v := p.Param(i, 0)
		switch {
		case v == 0:
			*pen = Attr{}
		case v == 1:
			pen.Flags |= Bold
		case v == 2:
			pen.Flags |= Faint
		case v == 3:
			pen.Flags |= Italic
		case v == 4:
			pen.Flags |= Underline
			if p.HasSub(i) { // 4:0 is no underline, 4:n a style
				if p.Param(i+1, 1) == 0 {
					pen.Flags &^= Underline
				}
				i = skipSubs(p, i)
			}
		case v == 5 || v == 6:
			pen.Flags |= Blink
		case v == 7:
			pen.Flags |= Reverse
		case v == 8:
			pen.Flags |= Conceal
		case v == 9:
			pen.Flags |= Strike
		case v == 21:
			pen.Flags |= Underline // double underline
		case v == 22:
			pen.Flags &^= Bold | Faint
		case v == 23:
			pen.Flags &^= Italic
		case v == 24:
			pen.Flags &^= Underline
		case v == 25:
			pen.Flags &^= Blink
		case v == 27:
			pen.Flags &^= Reverse
		case v == 28:
			pen.Flags &^= Conceal
		case v == 29:
			pen.Flags &^= Strike
		case v >= 30 && v <= 37:
			pen.Fg = Palette(uint8(v - 30))
		case v == 38:
			var c Color
			c, i = extendedColor(p, i)
			if c != DefaultColor {
				pen.Fg = c
			}
		case v == 39:
			pen.Fg = DefaultColor
		case v >= 40 && v <= 47:
			pen.Bg = Palette(uint8(v - 40))
		case v == 48:
			var c Color
			c, i = extendedColor(p, i)
			if c != DefaultColor {
				pen.Bg = c
			}
		case v == 49:
			pen.Bg = DefaultColor
		case v == 58:
			_, i = extendedColor(p, i) // underline colour: not shown in text
		case v >= 90 && v <= 97:
			pen.Fg = Palette(uint8(v - 90 + 8))
		case v >= 100 && v <= 107:
			pen.Bg = Palette(uint8(v - 100 + 8))
		default:
			if p.HasSub(i) {
				i = skipSubs(p, i)
			}
		}
	}
}

// skipSubs returns the index of the last sub-parameter of parameter i.
func skipSubs(p *Parser, i int) int {
	for p.HasSub(i) {
		i++
	}
	return i
}

// extendedColor reads the colour after 38, 48 or 58 at index i, in either
// the ';' form (38;5;n, 38;2;r;g;b) or the ':' form (38:5:n, 38:2::r:g:b
// or 38:2:r:g:b). It returns DefaultColor for a malformed one and the index
// of the last parameter it used.
func extendedColor(p *Parser, i int) (Color, int) {
	if p.HasSub(i) {
		end := skipSubs(p, i)
		sub := make([]int, 0, 6)
		for j := i + 1; j <= end; j++ {
			sub = append(sub, p.Param(j, -1))
		}
		switch {
		case len(sub) >= 2 && sub[0] == 5:
			return palette(sub[1]), end
		case len(sub) >= 4 && sub[0] == 2:
			rgb := sub[len(sub)-3:] // with or without the colour space ID
			return rgbColor(rgb[0], rgb[1], rgb[2]), end
		}
		return DefaultColor, end
	}
	switch p.Param(i+1, -1) {
	case 5:
		return palette(p.Param(i+2, -1)), min(i+2, p.NumParams()-1)
	case 2:
		return rgbColor(p.Param(i+2, -1), p.Param(i+3, -1), p.Param(i+4, -1)), min(i+4, p.NumParams()-1)
	}
	return DefaultColor, min(i+1, p.NumParams()-1)
}

func palette(n int) Color {
	if n < 0 || n > 255 {
		return DefaultColor
	}
	return Palette(uint8(n))
}

func rgbColor(r, g, b int) Color {
	if r < 0 || r > 255 || g < 0 || g > 255 || b < 0 || b > 255 {
		return DefaultColor
	}
	return RGB(uint8(r), uint8(g), uint8(b))
}

// SGR returns the escape sequence that sets a rendition from scratch.
func (a Attr) SGR() string {
	var b strings.Builder
	b.WriteString("\x1b[0")
	for _, f := range []struct {
		flag Flags
		code string
	}{{Bold, "1"}, {Faint, "2"}, {Italic, "3"}, {Underline, "4"}, {Blink, "5"}, {Reverse, "7"}, {Conceal, "8"}, {Strike, "9"}} {
		if a.Flags&f.flag != 0 {
			b.WriteString(";" + f.code)
		}
	}
	writeColor(&b, a.Fg, "38")
	writeColor(&b, a.Bg, "48")
	b.WriteByte('m')
	return b.String()
}

func writeColor(b *strings.Builder, c Color, base string) {
	switch c & kindMask {
	case paletteKind:
		b.WriteString(";" + base + ";5;" + strconv.Itoa(int(c&0xFF)))
	case rgbKind:
		b.WriteString(";" + base + ";2;" + strconv.Itoa(int(c>>16&0xFF)) + ";" + strconv.Itoa(int(c>>8&0xFF)) + ";" + strconv.Itoa(int(c&0xFF)))
	}
}
