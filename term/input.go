package term

import (
	"github.com/dsh-browser/broker/term/vt"
)

// isReport reports whether input from the owner's terminal is entirely
// the terminal answering a program's query (cursor position, device
// attributes, mode reports, colours, focus) rather than the person typing.
// Only the person typing takes control back from an agent.
func isReport(p []byte) bool {
	var c reportClassifier
	start := true
	for _, b := range p {
		if start {
			c.first, c.second, c.n = b, 0, 0
		}
		c.n++
		if c.n == 2 {
			c.second = b
		}
		c.p.Advance(b, &c)
		start = c.p.AtBoundary()
		if start && !c.report {
			return false
		}
		if start {
			c.report = false
		}
	}
	return start && len(p) > 0
}

type reportClassifier struct {
	p             vt.Parser
	first, second byte
	n             int
	report        bool // the token just ended was a report
}

func (c *reportClassifier) Print(rune)   {}
func (c *reportClassifier) Execute(byte) {}
func (c *reportClassifier) OSC([]byte)   { c.report = true }
func (c *reportClassifier) ESC(p *vt.Parser, final byte) {
	// The ST ending a DCS or APC string: the string was a report.
	c.report = final == '\\' && c.first == 0x1b && (c.second == 'P' || c.second == '_' || c.second == '^' || c.second == ']')
}
func (c *reportClassifier) CSI(p *vt.Parser, final byte) {
	in := p.Intermediates()
	switch {
	case final == 'R' && p.Private() == 0 && p.NumParams() == 2: // CPR
		c.report = true
	case final == 'c' && (p.Private() == '?' || p.Private() == '>'): // DA1, DA2
		c.report = true
	case final == 'n' && p.Private() == 0: // DSR status
		c.report = true
	case final == 'y' && len(in) == 1 && in[0] == '$': // DECRPM
		c.report = true
	case final == 't' && p.Private() == 0: // window reports
		c.report = true
	case (final == 'I' || final == 'O') && p.NumParams() == 0 && p.Private() == 0: // focus
		c.report = true
	}
}
