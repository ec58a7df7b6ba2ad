package session

import "regexp"

// Policy decides what happens to a command line an agent submits with
// Enter. Deny wins over Ask; a line matching neither runs (in autopilot)
// or waits for the owner's acceptance (in co-pilot, where every Enter
// does). Patterns match anywhere in the line, which includes the prompt.
type Policy struct {
	Deny []*regexp.Regexp // refused without asking
	Ask  []*regexp.Regexp // run only after the owner approves
}

type verdict uint8

const (
	allow verdict = iota
	ask
	deny
)

func (p Policy) judge(line string) verdict {
	for _, re := range p.Deny {
		if re.MatchString(line) {
			return deny
		}
	}
	for _, re := range p.Ask {
		if re.MatchString(line) {
			return ask
		}
	}
	return allow
}
