package vt

import "unicode/utf8"

// Limits of one control sequence. Longer ones are still consumed whole, but
// what they carry beyond these is dropped.
const (
	MaxParams     = 32    // parameters (and sub-parameters) of a CSI
	MaxParamValue = 65535 // a larger parameter value is clamped
	MaxOSC        = 4096  // bytes of an OSC string kept for its handler
	maxInter      = 2     // intermediate bytes kept
	missing       = -1    // a parameter left empty, as in "CSI ;5H"
	replacement   = '\uFFFD'
)

// Handler receives what a [Parser] recognises. The parser calls it from
// [Parser.Advance]; a handler must not call Advance again.
type Handler interface {
	// Print shows one character (already decoded from UTF-8).
	Print(r rune)
	// Execute runs a C0 control (BS, HT, LF, CR, …).
	Execute(b byte)
	// CSI runs a control sequence; its parameters are read from p.
	CSI(p *Parser, final byte)
	// ESC runs an escape sequence; its intermediates are read from p.
	ESC(p *Parser, final byte)
	// OSC receives an operating system command's payload (at most
	// [MaxOSC] bytes of it).
	OSC(data []byte)
}

type state uint8

const (
	ground state = iota
	escape
	escapeInter
	csiEntry
	csiParam
	csiInter
	csiIgnore
	dcsEntry
	dcsParam
	dcsInter
	dcsPass
	dcsIgnore
	oscString
	stringIgnore // SOS, PM, APC
)

// Parser is the DEC/ANSI state machine of Paul Williams' "A parser for
// DEC's ANSI-compatible video terminals", over UTF-8 text. It keeps no
// screen: it turns bytes into calls on a [Handler]. The zero value is ready.
//
// Raw C1 bytes (0x80–0x9F) are not controls here: in UTF-8 they can only be
// continuation bytes, and a stray one prints U+FFFD. DCS strings are
// recognised and skipped.
type Parser struct {
	st state

	// UTF-8 being decoded in the ground state.
	u8     [utf8.UTFMax]byte
	u8n    int
	u8need int

	params  [MaxParams]int32
	colon   [MaxParams]bool // params[i] is followed by ':' (a sub-parameter)
	nparams int
	pfull   bool // more parameters than kept: the rest are dropped
	private byte // '<', '=', '>' or '?' opening a CSI, 0 if none
	inter   [maxInter]byte
	ninter  int
	ovfl    bool // more intermediates than kept: the sequence is ignored

	osc []byte
}

// AtBoundary reports whether the parser is between sequences and
// characters, so that bytes written next start something new.
func (p *Parser) AtBoundary() bool { return p.st == ground && p.u8need == 0 }

// NumParams returns how many parameters the current sequence has.
func (p *Parser) NumParams() int { return p.nparams }

// Param returns parameter i, or def when it is absent or empty.
func (p *Parser) Param(i, def int) int {
	if i >= p.nparams || p.params[i] == missing {
		return def
	}
	return int(p.params[i])
}

// HasSub reports whether parameter i is followed by a ':' sub-parameter.
func (p *Parser) HasSub(i int) bool { return i < p.nparams && p.colon[i] }

// Private returns the private marker of the current CSI ('?', '>', …) or 0.
func (p *Parser) Private() byte { return p.private }

// Intermediates returns the intermediate bytes of the current sequence.
func (p *Parser) Intermediates() []byte { return p.inter[:p.ninter] }

func (p *Parser) clear() {
	p.nparams = 0
	p.pfull = false
	p.private = 0
	p.ninter = 0
	p.ovfl = false
}

// Advance feeds one byte; it may call h several times (an interrupted UTF-8
// sequence prints U+FFFD, then the byte is read afresh).
func (p *Parser) Advance(b byte, h Handler) {
	if p.u8need > 0 {
		if b&0xC0 == 0x80 {
			p.u8[p.u8n] = b
			p.u8n++
			if p.u8n == p.u8need {
				r, _ := utf8.DecodeRune(p.u8[:p.u8n])
				p.u8n, p.u8need = 0, 0
				h.Print(r) // RuneError for overlongs and surrogates
			}
			return
		}
		p.u8n, p.u8need = 0, 0
		h.Print(replacement)
	}

	// Transitions from anywhere.
	switch b {
	case 0x18, 0x1A: // CAN, SUB abort a sequence
		if p.st == oscString {
			p.osc = p.osc[:0]
		}
		p.st = ground
		h.Execute(b)
		return
	case 0x1B:
		if p.st == oscString {
			h.OSC(p.osc) // ESC begins the ST that ends it
			p.osc = p.osc[:0]
		}
		p.clear()
		p.st = escape
		return
	}

	switch p.st {
	case ground:
		switch {
		case b < 0x20:
			h.Execute(b)
		case b < 0x7F:
			h.Print(rune(b))
		case b == 0x7F: // DEL is ignored
		default:
			p.startUTF8(b, h)
		}

	case escape:
		switch {
		case b < 0x20:
			h.Execute(b)
		case b < 0x30:
			p.collect(b)
			p.st = escapeInter
		case b == '[':
			p.clear()
			p.st = csiEntry
		case b == ']':
			p.osc = p.osc[:0]
			p.st = oscString
		case b == 'P':
			p.clear()
			p.st = dcsEntry
		case b == 'X', b == '^', b == '_':
			p.st = stringIgnore
		case b < 0x7F:
			p.st = ground
			h.ESC(p, b)
		default:
			p.st = ground
		}

	case escapeInter:
		switch {
		case b < 0x20:
			h.Execute(b)
		case b < 0x30:
			p.collect(b)
		case b < 0x7F:
			p.st = ground
			if !p.ovfl {
				h.ESC(p, b)
			}
		default:
			p.st = ground
		}

	case csiEntry, csiParam:
		switch {
		case b < 0x20:
			h.Execute(b)
		case b >= '0' && b <= '9':
			p.digit(b)
			p.st = csiParam
		case b == ';' || b == ':':
			p.separator(b == ':')
			p.st = csiParam
		case b >= '<' && b <= '?':
			if p.st != csiEntry {
				p.st = csiIgnore
				return
			}
			p.private = b
			p.st = csiParam
		case b < 0x30:
			p.collect(b)
			p.st = csiInter
		case b < 0x7F:
			p.st = ground
			p.dispatchCSI(b, h)
		default:
			p.st = csiIgnore
		}

	case csiInter:
		switch {
		case b < 0x20:
			h.Execute(b)
		case b < 0x30:
			p.collect(b)
		case b < 0x40:
			p.st = csiIgnore
		case b < 0x7F:
			p.st = ground
			p.dispatchCSI(b, h)
		default:
			p.st = csiIgnore
		}

	case csiIgnore:
		switch {
		case b < 0x20:
			h.Execute(b)
		case b >= 0x40 && b < 0x7F:
			p.st = ground
		}

	case dcsEntry, dcsParam, dcsInter:
		switch {
		case b < 0x20: // ignored inside a DCS header
		case b < 0x30:
			p.st = dcsInter
		case b < 0x40:
			if p.st == dcsInter {
				p.st = dcsIgnore
			} else {
				p.st = dcsParam
			}
		case b < 0x7F:
			p.st = dcsPass
		default:
			p.st = dcsIgnore
		}

	case dcsPass, dcsIgnore, stringIgnore:
		// Consumed until ST (ESC \), which the ESC transition above starts.

	case oscString:
		switch {
		case b == 0x07: // BEL ends an OSC, as xterm allows
			h.OSC(p.osc)
			p.osc = p.osc[:0]
			p.st = ground
		case b < 0x20: // other controls are ignored inside the string
		default:
			if len(p.osc) < MaxOSC {
				p.osc = append(p.osc, b)
			}
		}
	}
}

func (p *Parser) startUTF8(b byte, h Handler) {
	var need int
	switch {
	case b >= 0xC2 && b <= 0xDF:
		need = 2
	case b >= 0xE0 && b <= 0xEF:
		need = 3
	case b >= 0xF0 && b <= 0xF4:
		need = 4
	default: // continuation byte or invalid lead
		h.Print(replacement)
		return
	}
	p.u8[0] = b
	p.u8n, p.u8need = 1, need
}

func (p *Parser) collect(b byte) {
	if p.ninter == maxInter {
		p.ovfl = true
		return
	}
	p.inter[p.ninter] = b
	p.ninter++
}

func (p *Parser) digit(b byte) {
	if p.pfull {
		return
	}
	if p.nparams == 0 {
		p.nparams = 1
		p.params[0] = missing
		p.colon[0] = false
	}
	i := p.nparams - 1
	v := p.params[i]
	if v == missing {
		v = 0
	}
	v = v*10 + int32(b-'0')
	if v > MaxParamValue {
		v = MaxParamValue
	}
	p.params[i] = v
}

func (p *Parser) separator(colon bool) {
	if p.nparams == 0 {
		p.nparams = 1
		p.params[0] = missing
	}
	if p.pfull || p.nparams == MaxParams {
		p.pfull = true // further parameters are dropped
		return
	}
	p.colon[p.nparams-1] = colon
	p.params[p.nparams] = missing
	p.colon[p.nparams] = false
	p.nparams++
}

func (p *Parser) dispatchCSI(final byte, h Handler) {
	if p.ovfl {
		return
	}
	h.CSI(p, final)
}
