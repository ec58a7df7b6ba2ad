package term

import (
	"fmt"
	"strings"

	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/term/vt"
)

// barText is the owner bar: one line of exactly cols cells.
func barText(b session.Bar, menu bool, prefix string, cols int) string {
	var s string
	if menu {
		s = fmt.Sprintf(" %s: s share/stop  y yes  n no  m mode  t take control  %s send %s  (other: close)", b.Session, prefix, prefix)
	} else {
		sharing := "private"
		if b.Shared {
			sharing = fmt.Sprintf("shared with %d", b.Participants)
		}
		s = fmt.Sprintf(" %s | %s | %s | control: %s", b.Session, sharing, b.Mode, b.Controller)
		if !b.ProcessAlive {
			s += " | exited"
		}
		s += " | " + prefix + " menu"
		if q := b.Question; q != nil { // the question matters most: it comes first
			s = fmt.Sprintf(" %s ? %s — %s y/n", b.Session, q.Text, prefix)
			if b.Waiting > 1 {
				s += fmt.Sprintf(" (+%d)", b.Waiting-1)
			}
		}
	}
	return fit(s, cols)
}

// fit cuts or pads s to exactly cols cells; a cut ends in "…".
func fit(s string, cols int) string {
	var rs []rune
	w, cut := 0, false
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			r = '?'
		}
		rw := vt.RuneWidth(r)
		if rw == 0 {
			continue
		}
		if w+rw > cols {
			cut = true
			break
		}
		rs = append(rs, r)
		w += rw
	}
	if cut && cols > 0 {
		for w > cols-1 && len(rs) > 0 {
			w -= vt.RuneWidth(rs[len(rs)-1])
			rs = rs[:len(rs)-1]
		}
		rs = append(rs, '…')
		w++
	}
	return string(rs) + strings.Repeat(" ", cols-w)
}
