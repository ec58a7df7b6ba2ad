package mcpserver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

// Outline renders an observation as a compact outline a model reads
// easily, in the manner of an ARIA snapshot:
//
//	page "DSH demo" http://127.0.0.1:8080/form  (truncated)
//	leaseId=L… documentEpoch=F…:L…
//	- region main "Greeting" [ref=r…]
//	- textbox "Your name" [ref=r0123456789abcdef] value="Ada"
//	- checkbox "Send me updates" [ref=r…] checked=false
//	- button "Greet" [ref=r…]
//	text:
//	  DSH demo
//	  Hello, Ada!
//
// Elements come first, in document order: controls with the ref to act on
// and their state, and named regions with theirs (a region's ref is a
// rootRef, and a scroll or wheel target; nothing else acts on it).
// Then the page's text fragments, one per line with whitespace collapsed;
// a fragment that only repeats the name of an element listed above is left
// out. The second line carries the two values browser_act needs besides a
// ref.
func Outline(o *browser.Observation, leaseID string) string {
	var b strings.Builder
	writeOutline(&b, o, leaseID)
	return b.String()
}

func writeOutline(b *strings.Builder, o *browser.Observation, leaseID string) {
	fmt.Fprintf(b, "page %s %s", strconv.Quote(o.Title), o.URL)
	if o.Truncated {
		b.WriteString("  (truncated)")
	}
	b.WriteByte('\n')
	if o.Scope.Kind == "frame" {
		fmt.Fprintf(b, "frame %s (to act on a ref here, pass browser_act frame={frameId:%q, documentEpoch:%q} and this documentEpoch)\n", o.Scope.FrameID, o.Scope.FrameID, o.DocumentEpoch)
	}
	if o.Scope.Kind == "query" && o.Scope.Query != nil {
		q := o.Scope.Query
		fmt.Fprintf(b, "query name=%s", strconv.Quote(q.Name))
		if q.Role != "" {
			fmt.Fprintf(b, " role=%s", q.Role)
		}
		fmt.Fprintf(b, ": %s\n", plural(len(o.Nodes), "match", "matches"))
	}
	fmt.Fprintf(b, "leaseId=%s documentEpoch=%s\n", leaseID, o.DocumentEpoch)

	names := nameSet(o.Nodes)
	for i := range o.Nodes {
		writeNode(b, &o.Nodes[i])
	}
	if len(o.Nodes) == 0 {
		b.WriteString("(no controls)\n")
	}
	wroteText := false
	for _, t := range o.Text {
		t = collapse(t)
		if t == "" || names[t] {
			continue
		}
		if !wroteText {
			b.WriteString("text:\n")
			wroteText = true
		}
		b.WriteString("  ")
		b.WriteString(t)
		b.WriteByte('\n')
	}
	if o.Truncated {
		b.WriteString("(truncated: the page has more than this; find an element by its exact name with browser_observe query, or read everything in order with browser_read_page)\n")
	}
}

// inherentlyEditable roles need no "editable" mark.
var inherentlyEditable = map[string]bool{"textbox": true, "searchbox": true, "combobox": true, "spinbutton": true}

// writeNode writes one element.
func writeNode(b *strings.Builder, n *browser.NodeRef) {
	b.WriteString("- ")
	if n.Kind == "region" && n.Role != "region" {
		b.WriteString("region ")
	}
	b.WriteString(n.Role)
	if n.Name != "" {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(n.Name))
	}
	fmt.Fprintf(b, " [ref=%s]", n.ID)
	if n.Value != nil {
		fmt.Fprintf(b, " value=%s", strconv.Quote(*n.Value))
	}
	if n.Checked != nil {
		fmt.Fprintf(b, " checked=%v", n.Checked)
	}
	if n.Editable && !inherentlyEditable[n.Role] {
		b.WriteString(" editable")
	}
	if n.Disabled {
		b.WriteString(" disabled")
	}
	b.WriteByte('\n')
}

// RenderWindow renders one browser_read_page window: the outline of its
// elements (regions with their refs, to read one by rootRef) and text, then
// how to read on.
//
//	page "Big page" http://127.0.0.1:8080/big  window 1 of a reading (more follows)
//	leaseId=L… documentEpoch=F…:L…
//	- region "Group 1" [ref=r…]
//	- button "Item 1" [ref=r…]
//	…
//	next: browser_read_page leaseId=L… continuation=p… (single use, within 2 minutes)
func RenderWindow(w *browser.PageWindow, leaseID string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "page %s %s  window %d", strconv.Quote(w.Title), w.URL, w.Page.Index+1)
	if w.Scope.Kind == "subtree" {
		fmt.Fprintf(&b, " of the region %s", w.Scope.RootRef)
	}
	if w.Scope.FrameID != "" {
		fmt.Fprintf(&b, " in frame %s", w.Scope.FrameID)
	}
	if w.Page.Continuation != "" {
		b.WriteString(" (more follows)")
	} else {
		b.WriteString(" (the last)")
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "leaseId=%s documentEpoch=%s\n", leaseID, w.DocumentEpoch)
	names := nameSet(w.Nodes)
	for i := range w.Nodes {
		writeNode(&b, &w.Nodes[i])
	}
	wroteText := false
	for _, t := range w.Text {
		if t = collapse(t); t == "" || names[t] {
			continue
		}
		if !wroteText {
			b.WriteString("text:\n")
			wroteText = true
		}
		b.WriteString("  " + t + "\n")
	}
	if len(w.Nodes) == 0 && !wroteText {
		b.WriteString("(nothing to read in this window)\n")
	}
	if w.Page.Incomplete {
		b.WriteString("(incomplete: some of this part of the page could not be read, e.g. nesting too deep)\n")
	}
	if w.Page.Continuation != "" {
		fmt.Fprintf(&b, "next: browser_read_page leaseId=%s", leaseID)
		if w.Scope.Kind == "subtree" {
			fmt.Fprintf(&b, " rootRef=%s", w.Scope.RootRef)
		}
		if w.Scope.FrameID != "" {
			fmt.Fprintf(&b, " frame={frameId:%q, documentEpoch:%q}", w.Scope.FrameID, w.DocumentEpoch)
		}
		fmt.Fprintf(&b, " continuation=%s (single use, within 2 minutes)\n", w.Page.Continuation)
	}
	return b.String()
}

// RenderAction renders the result of browser_act: what happened, what to do
// about it, and the page afterwards.
//
// With a change (the result of an action asked with since), before is the
// observation the agent acted on, and the answer lists what changed since
// it instead of the whole page.
func RenderAction(res *browser.ActionResult, a *browser.Action, leaseID string, before *browser.Observation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", describeAction(a, nil), statusLine(res))
	if s := explainAction(res, a); s != "" {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	if c := res.CoveredBy; c != nil {
		b.WriteString(coverLine(c))
		b.WriteByte('\n')
	}
	if e := res.Scroll; e != nil {
		fmt.Fprintf(&b, "scroll of the %s by (%d, %d): from (%g, %g) to (%g, %g), %s\n", e.Target.Kind, e.Requested.DeltaX, e.Requested.DeltaY,
			e.Before.X, e.Before.Y, e.After.X, e.After.Y, map[bool]string{true: "moved", false: "did not move (nothing left to scroll that way?)"}[e.Moved])
	}
	fmt.Fprintf(&b, "requestId=%s\n", res.RequestID)
	if res.Change != nil && before != nil {
		writeChange(&b, before, res.Change, leaseID)
	} else {
		writeObservation(&b, res.Observation, leaseID)
	}
	return b.String()
}

// maxChangeLines bounds the changes an action's answer lists; past it the
// agent reads the whole page with browser_observe.
const maxChangeLines = 30

// writeChange renders what changed on the page since before, the
// observation the agent acted on: each element that appeared (with its
// ref), changed (with what it was) or went, and the text that appeared or
// went. The refs the agent already has stay valid.
//
//	page "DSH demo" http://127.0.0.1:8080/form
//	leaseId=L… documentEpoch=F…:L…
//	changes since your last view:
//	~ checkbox "Send me updates" [ref=r…] checked=true (was checked=false)
//	+ button "Undo" [ref=r…]
//	- gone: button "Save"
//	+ text: Saved.
func writeChange(b *strings.Builder, before *browser.Observation, d *browser.ObservationDelta, leaseID string) {
	fmt.Fprintf(b, "\npage %s %s", strconv.Quote(d.Title), d.URL)
	if d.Truncated {
		b.WriteString("  (truncated)")
	}
	fmt.Fprintf(b, "\nleaseId=%s documentEpoch=%s\n", leaseID, d.DocumentEpoch)
	was := make(map[string]*browser.NodeRef, len(before.Nodes))
	for i := range before.Nodes {
		was[before.Nodes[i].ID] = &before.Nodes[i]
	}
	var lines []string
	if d.Title != before.Title {
		lines = append(lines, fmt.Sprintf("~ title %s (was %s)", strconv.Quote(d.Title), strconv.Quote(before.Title)))
	}
	for i := range d.Nodes.Upsert {
		n := &d.Nodes.Upsert[i]
		var nb strings.Builder
		writeNode(&nb, n)
		line := strings.TrimSuffix(strings.TrimPrefix(nb.String(), "- "), "\n")
		if old := was[n.ID]; old != nil {
			lines = append(lines, "~ "+line+" (was "+difference(old, n)+")")
		} else {
			lines = append(lines, "+ "+line)
		}
	}
	// A change since a search is one of its matches (browser.act reads the
	// search again, not the page): one that went may still be on the page.
	search, gone := "", "- gone: "
	if q := d.Scope.Query; d.Scope.Kind == "query" && q != nil {
		search = " among the matches of name=" + strconv.Quote(q.Name)
		if q.Role != "" {
			search += " role=" + q.Role
		}
		gone = "- no longer matches: "
	}
	for _, id := range d.Nodes.Remove {
		if old := was[id]; old != nil {
			lines = append(lines, gone+label(old))
		}
	}
	if t := d.Text; t != nil && t.Start >= 0 && t.DeleteCount >= 0 && t.Start+t.DeleteCount <= len(before.Text) {
		for _, s := range before.Text[t.Start : t.Start+t.DeleteCount] {
			if s = collapse(s); s != "" {
				lines = append(lines, "- text: "+s)
			}
		}
		for _, s := range t.Insert {
			if s = collapse(s); s != "" {
				lines = append(lines, "+ text: "+s)
			}
		}
	}
	switch {
	case len(lines) == 0 && d.Nodes.Order != nil:
		b.WriteString("the same elements, in another order; browser_observe shows the whole page\n")
		return
	case len(lines) == 0 && search != "":
		b.WriteString("nothing changed" + search + " (browser_observe shows the whole page)\n")
		return
	case len(lines) == 0:
		b.WriteString("nothing on the page changed since your last view (browser_observe shows the whole page)\n")
		return
	}
	if search != "" {
		b.WriteString("changes" + search + " since your search (other refs still hold; browser_observe shows the whole page):\n")
	} else {
		b.WriteString("changes since your last view (other refs still hold):\n")
	}
	for i, l := range lines {
		if i == maxChangeLines {
			fmt.Fprintf(b, "… and %d more changes: browser_observe shows the whole page\n", len(lines)-i)
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if d.Truncated {
		b.WriteString("(truncated: the page has more than the outline holds; find an element by its exact name with browser_observe query)\n")
	}
}

// difference says what an element was before, in the attributes that
// changed.
func difference(old, n *browser.NodeRef) string {
	var was []string
	if old.Role != n.Role {
		was = append(was, old.Role)
	}
	if old.Name != n.Name {
		was = append(was, "named "+strconv.Quote(clip(old.Name, 60)))
	}
	switch {
	case old.Value == nil && n.Value != nil:
		was = append(was, "without a value")
	case old.Value != nil && (n.Value == nil || *old.Value != *n.Value):
		was = append(was, "value="+strconv.Quote(clip(*old.Value, 60)))
	}
	if fmt.Sprint(old.Checked) != fmt.Sprint(n.Checked) {
		if old.Checked == nil {
			was = append(was, "not checkable")
		} else {
			was = append(was, fmt.Sprintf("checked=%v", old.Checked))
		}
	}
	if old.Disabled != n.Disabled {
		was = append(was, map[bool]string{true: "disabled", false: "enabled"}[old.Disabled])
	}
	if old.Editable != n.Editable {
		was = append(was, map[bool]string{true: "editable", false: "not editable"}[old.Editable])
	}
	if len(was) == 0 {
		return "the same"
	}
	return strings.Join(was, ", ")
}

// coverLine says what covered an action's target, and what to do about it.
func coverLine(c *browser.Cover) string {
	what := c.Tag
	if c.Role != "" {
		what = c.Role
	}
	if c.Name != "" {
		what += " " + strconv.Quote(c.Name)
	}
	if c.Role != "" {
		what += " (" + c.Tag + ")"
	}
	if c.Ref != "" {
		what += " [ref=" + c.Ref + "]"
	}
	return "Covered by " + what + ": it would get the click. Close, accept or dismiss it first (a button in it, or Escape), or wait for it to go; it is never clicked through."
}

// RenderBatch renders the result of browser_batch: the plan's outcome,
// each step's, and the page after the last step that ran.
func RenderBatch(res *browser.BatchResult, steps []browser.BatchStep, leaseID string, denied string) string {
	var b strings.Builder
	attempted := 0
	for _, st := range res.Steps {
		if st.Status == "attempted" {
			attempted++
		}
	}
	fmt.Fprintf(&b, "batch: %s after %d of %d steps\n", statusLine(&res.ActionResult), attempted, res.TotalSteps)
	for _, st := range res.Steps {
		var a *browser.Action
		if st.Index >= 0 && st.Index < len(steps) {
			a = &steps[st.Index].Action
		}
		fmt.Fprintf(&b, "  step %d %s: ", st.Index+1, describeAction(a, nil))
		switch {
		case st.Status == "notRun":
			b.WriteString("not run\n")
		case st.Result == nil:
			b.WriteString(st.Status + "\n")
		default:
			b.WriteString(statusLine(st.Result) + "\n")
		}
	}
	if denied != "" {
		b.WriteString(denied)
		b.WriteByte('\n')
	} else if s := explain(&res.ActionResult); s != "" {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "requestId=%s\n", res.RequestID)
	writeObservation(&b, res.Observation, leaseID)
	return b.String()
}

func writeObservation(b *strings.Builder, o *browser.Observation, leaseID string) {
	if o == nil {
		b.WriteString("(no observation of the page afterwards: call browser_observe)\n")
		return
	}
	b.WriteString("\n")
	writeOutline(b, o, leaseID)
}

// statusLine is "succeeded" or e.g. "failed (dispatch notDispatched,
// postcondition unverified, code STALE_TARGET)".
func statusLine(r *browser.ActionResult) string {
	s := fmt.Sprintf("%s (dispatch %s, postcondition %s", r.Outcome, r.Dispatch, r.Postcondition)
	if r.Code != "" {
		s += ", code " + string(r.Code)
	}
	return s + ")"
}

// explainAction is explain for one action, saying what was verified.
func explainAction(r *browser.ActionResult, a *browser.Action) string {
	if r.Code != "" || a == nil {
		return explain(r)
	}
	switch {
	case r.Outcome == "succeeded" && r.Dispatch == "notDispatched":
		return "Nothing needed doing: it was already so (verified, no input sent)."
	case r.Outcome == "succeeded" && a.Kind == browser.ActNavigate && a.Expected == nil && r.Observation != nil:
		// Where it landed: a redirect or the page's router may have moved it.
		return "Done: " + verified(a, true) + " at " + clip(r.Observation.URL, 200) + "."
	case r.Outcome == "succeeded":
		return "Done: " + verified(a, true) + "."
	case r.Outcome == "failed" && r.Postcondition == "failed":
		return "The input was sent but " + verified(a, false) + " in time: look at the page below before trying anything else."
	}
	return explain(r)
}

// verified says what an action's success shows (ok), or what did not
// come.
func verified(a *browser.Action, ok bool) string {
	say := func(yes, no string) string {
		if ok {
			return yes
		}
		return no
	}
	if e := a.Expected; e != nil {
		switch e.Kind {
		case browser.ExpectValue:
			return say("the field holds the expected value", "the field did not hold the expected value")
		case browser.ExpectURL:
			return say("the tab shows the expected URL", "the tab did not show the expected URL")
		case browser.ExpectState:
			return say("the element is "+e.State, "the element did not become "+e.State)
		}
		return say("the expected text is on the page", "the expected text did not appear")
	}
	switch a.Kind {
	case browser.ActCheck:
		return say("the control is in the requested state", "the control did not take the requested state")
	case browser.ActSelect:
		return say("the option is selected", "the option did not stay selected")
	case browser.ActScroll:
		return say("it scrolled the way asked", "it did not scroll the way asked")
	case browser.ActNavigate:
		return say("the new page loaded", "the new page did not load")
	case browser.ActFill, browser.ActAppend:
		return say("the field holds the text", "the field did not hold the text")
	}
	return say("the expected text is on the page", "the expected text did not appear")
}

// explain says what an action's result means and what to do next.
func explain(r *browser.ActionResult) string {
	if r.Code == wire.CodeRecoveryRequired {
		s := "RECOVERY_REQUIRED: " + Hint(wire.CodeRecoveryRequired) + "."
		if rv := r.Recovery; rv != nil {
			s += fmt.Sprintf(" Known: state %s, dispatch %s", rv.State, rv.Dispatch)
			if rv.PriorOutcome != "" {
				s += ", earlier outcome " + rv.PriorOutcome
			}
			s += "."
		}
		return s
	}
	switch r.Outcome {
	case "succeeded":
		return "Done: the expected text is on the page."
	case "unknown":
		if r.Code == "" && r.Dispatch == "observed" {
			return "Done, not verified (no action.expected was given): check the page below."
		}
		s := "The input was sent but its effect is not confirmed: observe before doing anything else, and do not repeat the action blindly."
		if r.Code != "" {
			s += " " + string(r.Code) + ": " + Hint(r.Code) + "."
		}
		return s
	case "failed":
		if r.Postcondition == "failed" {
			return "The input was sent but the expected text did not appear in time: look at the page below before trying anything else."
		}
	}
	if r.Code != "" {
		prefix := "Nothing was done. "
		if r.Dispatch != "notDispatched" {
			prefix = ""
		}
		return prefix + string(r.Code) + ": " + Hint(r.Code) + "."
	}
	return ""
}

// describeAction names an action for a person or a model: `click button
// "Add one"` when the ref's label is known, else `click r…`.
func describeAction(a *browser.Action, labels map[string]string) string {
	if a == nil {
		return "action"
	}
	target := a.Ref
	if l, ok := labels[a.Ref]; ok {
		target = l
	}
	switch a.Kind {
	case "fill", "type", "append":
		text := ""
		if a.Text != nil {
			text = *a.Text
		}
		return fmt.Sprintf("%s %s with %s", a.Kind, target, strconv.Quote(clip(text, 60)))
	case "press":
		key := a.Key
		if a.Shift != nil && *a.Shift {
			key = "Shift+" + key
		}
		return fmt.Sprintf("press %s on %s", key, target)
	case "check":
		if a.Checked != nil && !*a.Checked {
			return "uncheck " + target
		}
		return "check " + target
	case "select":
		if a.Value != nil {
			return fmt.Sprintf("select the value %s in %s", strconv.Quote(clip(*a.Value, 60)), target)
		}
		option := ""
		if a.Option != nil {
			option = *a.Option
		}
		return fmt.Sprintf("select %s in %s", strconv.Quote(clip(option, 60)), target)
	case "chord":
		return fmt.Sprintf("press %s on %s", strings.Join(append(slices.Clone(a.Modifiers), a.Key), "+"), target)
	case "drag":
		if a.ToRef != "" {
			to := a.ToRef
			if l, ok := labels[a.ToRef]; ok {
				to = l
			}
			return fmt.Sprintf("drag %s onto %s", target, to)
		}
		var dx, dy int
		if a.DeltaX != nil && a.DeltaY != nil {
			dx, dy = *a.DeltaX, *a.DeltaY
		}
		return fmt.Sprintf("drag %s by (%d, %d)", target, dx, dy)
	case "clickAt":
		var x, y int
		if a.X != nil && a.Y != nil {
			x, y = *a.X, *a.Y
		}
		return fmt.Sprintf("click %s at (%d, %d)", target, x, y)
	case "scroll", "wheel":
		var dx, dy int
		if a.DeltaX != nil && a.DeltaY != nil {
			dx, dy = *a.DeltaX, *a.DeltaY
		}
		if a.Kind == "scroll" && target == "" {
			target = "the page"
		}
		return fmt.Sprintf("%s %s by (%d, %d)", a.Kind, target, dx, dy)
	case "navigate":
		return "navigate to " + clip(a.URL, 200)
	}
	return a.Kind + " " + target
}

// label is how an element is named in a batch step's approval question.
func label(n *browser.NodeRef) string {
	if n.Name == "" {
		return n.Role
	}
	return n.Role + " " + strconv.Quote(clip(n.Name, 60))
}

// nameSet holds the elements' names, whitespace-collapsed: a text fragment
// that only repeats one is left out of an outline.
func nameSet(nodes []browser.NodeRef) map[string]bool {
	names := make(map[string]bool, len(nodes))
	for i := range nodes {
		names[collapse(nodes[i].Name)] = true
	}
	return names
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// FrameOutline renders a frame inventory as an outline, one frame a line,
// children indented under their parent:
//
//	frames of tab=inst:7: 3 frames  (truncated)
//	leaseId=L1 documentEpoch=F…:L…
//	- frame F0 http://127.0.0.1:8080 same-origin main
//	  - frame F1 https://ads.example cross-origin context unavailable
//	    - frame F2 (origin unknown) opaque context unavailable
//	(truncated: the page may have more frames than these)
//	Cross-origin and opaque frames are painted black in browser_screenshot and cannot be read.
//
// Frames come in the inventory's order under each parent; a frame whose
// parent is not listed starts a tree of its own.
func FrameOutline(inv *browser.FrameInventory, leaseID string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "frames of tab=%s: %s", inv.Tab, plural(len(inv.Frames), "frame", "frames"))
	if inv.Truncated {
		b.WriteString("  (truncated)")
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "leaseId=%s documentEpoch=%s\n", leaseID, inv.DocumentEpoch)

	listed := make(map[string]bool, len(inv.Frames))
	children := make(map[string][]*browser.Frame)
	for i := range inv.Frames {
		f := &inv.Frames[i]
		listed[f.ID] = true
		children[f.ParentID] = append(children[f.ParentID], f)
	}
	written := make(map[*browser.Frame]bool, len(inv.Frames))
	var walk func(f *browser.Frame, depth int)
	walk = func(f *browser.Frame, depth int) {
		if written[f] {
			return // a cycle: each frame is written once
		}
		written[f] = true
		writeFrame(&b, f, depth)
		if f.ID == "" {
			return // "" is the parent of the roots, not of this frame
		}
		for _, c := range children[f.ID] {
			walk(c, depth+1)
		}
	}
	for i := range inv.Frames {
		if f := &inv.Frames[i]; f.ParentID == "" || !listed[f.ParentID] {
			walk(f, 0)
		}
	}
	for i := range inv.Frames {
		walk(&inv.Frames[i], 0) // frames only reachable through a cycle
	}
	if len(inv.Frames) == 0 {
		b.WriteString("(no frames)\n")
	}
	if inv.Truncated {
		b.WriteString("(truncated: the page may have more frames than these)\n")
	}
	b.WriteString("Cross-origin and opaque frames are painted black in browser_screenshot and cannot be read; a same-origin frame under same-origin frames can be read with browser_observe frame={frameId, documentEpoch}.\n")
	return b.String()
}

func writeFrame(b *strings.Builder, f *browser.Frame, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString("- frame ")
	b.WriteString(f.ID)
	if f.Origin != "" {
		b.WriteString(" " + f.Origin)
	} else {
		b.WriteString(" (origin unknown)")
	}
	if f.OriginRelation != "" {
		b.WriteString(" " + f.OriginRelation)
	}
	if f.IsMain {
		b.WriteString(" main")
	}
	if f.ContextStatus == "unavailable" {
		b.WriteString(" context unavailable")
	}
	if !f.IsMain && f.OriginRelation == "same-origin" && f.DocumentEpoch != "" {
		// What browser_observe needs to read it (if every frame above it is
		// same-origin too).
		b.WriteString(" documentEpoch=" + f.DocumentEpoch)
	}
	b.WriteByte('\n')
}
