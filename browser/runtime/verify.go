package runtime

import (
	"strings"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// check reads the page after an input: whether a condition holds and, when
// it does not, whether the reading shows it false (definitive) rather than
// not knowable yet (a document still loading).
type check func() (holds, definitive bool, err error)

// verify observes the page after an input, or after deciding none was
// needed, and checks the action's own postcondition (holds, nil for none)
// and its expectation, re-reading on every page change until they hold or
// the deadline ends the wait. The conditions read from the page (holds,
// state, value, url) must hold before the observation and again after it;
// the result carries the last observation.
//
// With neither, it is one observation, postcondition unverified. At the
// deadline it is failed when the last reading showed a condition false
// (text absent from a complete observation, another value, URL or state),
// else unknown: a truncated observation cannot prove text absent.
func (a *action) verify(holds check) *browser.ActionResult {
	res, e := a.res, a.a.Expected
	res.Outcome, res.Postcondition = "unknown", "unverified"
	definitive := false // the last reading showed a condition false
	// end answers at the deadline, or when a reading fails: a reading cut
	// by the deadline leaves the last complete one standing.
	end := func(err error) *browser.ActionResult {
		if err != nil && a.ctx.Err() == nil {
			return a.lost(err)
		}
		if definitive {
			res.Outcome, res.Postcondition = "failed", "failed"
		}
		return res
	}
	for {
		wake := a.p.changes()
		ok, shown, err := a.conditions(holds, e)
		if err != nil {
			return end(err)
		}
		definitive = shown
		if !ok && !shown { // not knowable yet (a document still loading): wait
			if !a.wait(wake, verifyInterval) {
				return end(nil)
			}
			continue
		}
		obs, err := a.result()
		if err != nil {
			if ok {
				return end(err)
			}
			if !a.wait(wake, verifyInterval) { // the page moves under a false condition: read again
				return end(nil)
			}
			continue
		}
		res.Observation = obs
		if res.Dispatch == "dispatched" {
			res.Dispatch = "observed"
		}
		if holds == nil && e == nil {
			return res
		}
		if ok {
			if ok, shown, err = a.seen(e, obs); err != nil {
				return end(err)
			}
			if ok {
				if ok, shown, err = a.conditions(holds, e); err != nil {
					return end(err)
				}
			}
			if ok {
				res.Outcome, res.Postcondition = "succeeded", "passed"
				return res
			}
		}
		definitive = shown
		if !a.wait(wake, verifyInterval) {
			return end(nil)
		}
	}
}

// lost ends a verification that could not go on: nothing is known of the
// postcondition. When no input was sent, it is refused as before one.
func (a *action) lost(err error) *browser.ActionResult {
	res := a.res
	if res.Dispatch == "notDispatched" {
		return refuse(res, err)
	}
	res.Outcome, res.Postcondition, res.Code = "unknown", "unverified", rpc.CodeOf(err)
	return res
}

// conditions reads what must hold before and after the observation: the
// action's own postcondition, then a state, value or url expectation.
func (a *action) conditions(holds check, e *browser.Expected) (bool, bool, error) {
	if holds != nil {
		if ok, definitive, err := holds(); err != nil || !ok {
			return false, definitive, err
		}
	}
	if e == nil {
		return true, false, nil
	}
	switch e.Kind {
	case browser.ExpectState:
		f, err := a.read(a.bound)
		if err != nil {
			return false, false, err
		}
		matched, ok := statePredicate(e.State, f)
		if !ok {
			return false, false, wire.Err(wire.CodeUnsupportedCapability)
		}
		return matched, true, nil
	case browser.ExpectValue:
		return a.valueIs(*e.Value)()
	case browser.ExpectURL:
		frame, ready, err := a.mainDocument()
		if err != nil {
			return false, false, err
		}
		if !ready {
			return false, false, nil
		}
		return frame.URL+frame.URLFragment == e.URL, true, nil
	}
	return true, false, nil
}

// seen checks the expectation against the observation: its text, or its URL.
func (a *action) seen(e *browser.Expected, obs *browser.Observation) (ok, definitive bool, err error) {
	if e == nil {
		return true, false, nil
	}
	switch e.Kind {
	case browser.ExpectText:
		if obs.Scope.Kind == "query" {
			return a.textShown(e.Text)
		}
		ok, definitive = textIn(obs, e.Text, func() []browser.NodeRef { return a.named(e.Text) })
		return ok, definitive, nil
	case browser.ExpectURL:
		return obs.URL == e.URL, true, nil
	}
	return true, false, nil
}

// textIn checks an expected text against an observation of the page (or
// of the frame acted in): in its text fragments, or, beyond a truncated
// one, as the exact name of an element (named, asked only then). definitive
// is false when the text could be past the observation's budgets.
func textIn(obs *browser.Observation, text string, named func() []browser.NodeRef) (ok, definitive bool) {
	if containsText(obs.Text, text) || (obs.Truncated && len(named()) > 0) {
		return true, false
	}
	return false, !obs.Truncated
}

// textShown checks an expected text for an action answered with a search
// (readScope), whose result holds no text: with the bounded search for the
// text as an exact name first, and the page read only when that cannot
// decide. A text node of exactly that text decides: the page's observation
// would show it among its fragments, or be truncated and accept the name.
// Else the page is read and the text checked as textIn does, the search
// already made standing for its names: the same answer as reading the page
// first, without a read of the whole page when the text is on it.
func (a *action) textShown(text string) (ok, definitive bool, err error) {
	matches := a.named(text)
	for _, n := range matches {
		if n.Role == "StaticText" {
			return true, false, nil
		}
	}
	page, err := a.look(nil)
	if err != nil {
		return false, false, err
	}
	ok, definitive = textIn(page, text, func() []browser.NodeRef { return matches })
	return ok, definitive, nil
}

// result reads the observation the result carries: the page, or for an
// action answered with a change since a search, the same search while it
// finds the same document (readScope).
func (a *action) result() (*browser.Observation, error) {
	if s := readScopeFrom(a.ctx); s != nil {
		obs, err := a.look(s.query)
		if err != nil || obs.DocumentEpoch == s.epoch {
			return obs, err
		}
	}
	return a.look(nil)
}

// look observes the page the action is verified in: the main document, or
// the child frame acted in.
func (a *action) look(q *browser.Query) (*browser.Observation, error) {
	if a.req.Frame != nil {
		return a.r.observeFrame(a.ctx, a.l, a.p, a.prov, a.req.Frame, q)
	}
	obs, err := a.r.observe(a.ctx, a.l, a.p, q)
	if obs != nil {
		obs.FrameOwners = nil // an observation's, not an action result's
	}
	return obs, err
}

// statePredicate evaluates a state expectation on an element's facts. ok
// is false for a predicate the broker cannot read there (checked of an
// element without a checked state; enabled of one that has no disabled
// state, or nested past 64 ancestors). A node that is gone is detached and
// hidden.
func statePredicate(state string, f *domFacts) (matched, ok bool) {
	if !f.Found {
		return state == "detached" || state == "hidden", true
	}
	switch state {
	case "attached":
		return f.Connected, true
	case "detached":
		return !f.Connected, true
	}
	if !f.Connected {
		return state == "hidden", true
	}
	switch state {
	case "visible":
		return f.Visible, true
	case "hidden":
		return !f.Visible, true
	case "checked", "unchecked":
		if f.Checked == nil {
			return false, false
		}
		return f.Checked == (state == "checked"), true
	case "enabled", "disabled":
		if !f.EnabledState || !f.DisabledKnown {
			return false, false
		}
		return f.Disabled == (state == "disabled"), true
	}
	return false, false
}

// named searches for an expected text as the exact accessible name of an
// element or a text node (a bounded, literal search, like a query
// observation) and returns the matches; none when the text cannot be a
// name or the search fails.
func (a *action) named(text string) []browser.NodeRef {
	name := collapse(text)
	if !bounded(name, 1, browser.MaxNameLength) {
		return nil
	}
	q, err := a.look(&browser.Query{Name: name})
	if err != nil {
		return nil
	}
	return q.Nodes
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func containsText(fragments []string, want string) bool {
	return strings.Contains(collapse(strings.Join(fragments, " ")), collapse(want))
}
