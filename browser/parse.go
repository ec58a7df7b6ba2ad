package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParamsError says why a method's params were refused. The runtime answers
// every one INVALID_REQUEST.
type ParamsError struct {
	Field  string
	Reason string
	// Rule names a rule past what the published schema can say (one of the
	// Rule* constants) when that is the only reason; empty when the params
	// do not match the schema.
	Rule string
}

func (e *ParamsError) Error() string {
	s := "browser: params"
	if e.Field != "" {
		s += ": " + e.Field
	}
	s += " " + e.Reason
	if e.Rule != "" {
		s += " (rule " + e.Rule + ")"
	}
	return s
}

// Rules the Go checks add to the published schema, which cannot say them.
// Params that break only these match the schema and are still refused.
const (
	// RuleUTF16 bounds string lengths in UTF-16 units, as the reference
	// does; the schema's lengths count code points, so a string of
	// characters outside the Basic Multilingual Plane may fit the schema
	// and not this.
	RuleUTF16 = "utf16-length"
	// RuleReservedID reserves request IDs starting "batch:" for batch steps.
	RuleReservedID = "reserved-request-id"
	// RuleFrameEpoch: an action in a frame names the frame's document in
	// both documentEpoch and frame.documentEpoch.
	RuleFrameEpoch = "frame-epoch"
	// RuleFrameAction: an action in a frame is click, fill, type, append,
	// press or one of the pointer and keyboard kinds of ours (dblclick,
	// hover, chord, drag, clickAt), with no expectation but text.
	RuleFrameAction = "frame-action"
	// RuleNavigateLast: navigate may only be a batch's last step.
	RuleNavigateLast = "navigate-last"
)

// ParseAct decodes and checks the params of browser.act: every field and
// which fields go with which action kind and expectation kind.
func ParseAct(data []byte) (*ActParams, error) {
	c := &checker{}
	obj, err := c.object(data, "")
	if err != nil {
		return nil, err
	}
	if err := c.keys(obj, "", []string{"sessionId", "request"}, nil); err != nil {
		return nil, err
	}
	var p ActParams
	if p.SessionID, err = c.str(obj, "", "sessionId", 1, 256); err != nil {
		return nil, err
	}
	req, err := c.object(obj["request"], "request")
	if err != nil {
		return nil, err
	}
	if err := c.actionRequest(req, "request", &p.Request); err != nil {
		return nil, err
	}
	return &p, c.done()
}

// ParseBatch decodes and checks the params of browser.batch.
func ParseBatch(data []byte) (*BatchParams, error) {
	c := &checker{}
	obj, err := c.object(data, "")
	if err != nil {
		return nil, err
	}
	if err := c.keys(obj, "", []string{"sessionId", "request", "approvalId"}, nil); err != nil {
		return nil, err
	}
	var p BatchParams
	if p.SessionID, err = c.str(obj, "", "sessionId", 1, 256); err != nil {
		return nil, err
	}
	if p.ApprovalID, err = c.str(obj, "", "approvalId", 1, 128); err != nil {
		return nil, err
	}
	req, err := c.object(obj["request"], "request")
	if err != nil {
		return nil, err
	}
	if err := c.keys(req, "request", []string{"requestId", "leaseId", "documentEpoch", "steps"}, []string{"timeoutMs"}); err != nil {
		return nil, err
	}
	r := &p.Request
	if err := c.requestIDs(req, "request", &r.RequestID, &r.LeaseID, &r.DocumentEpoch); err != nil {
		return nil, err
	}
	if r.TimeoutMs, err = c.optInt(req, "request", "timeoutMs", 1, 30_000); err != nil {
		return nil, err
	}
	steps, err := c.array(req["steps"], "request.steps", 1, MaxBatchSteps)
	if err != nil {
		return nil, err
	}
	for i, raw := range steps {
		field := fmt.Sprintf("request.steps[%d]", i)
		st, err := c.object(raw, field)
		if err != nil {
			return nil, err
		}
		if err := c.keys(st, field, []string{"action"}, []string{"timeoutMs"}); err != nil {
			return nil, err
		}
		var step BatchStep
		if step.TimeoutMs, err = c.optInt(st, field, "timeoutMs", 1, 30_000); err != nil {
			return nil, err
		}
		a, err := c.object(st["action"], field+".action")
		if err != nil {
			return nil, err
		}
		if err := c.action(a, field+".action", &step.Action); err != nil {
			return nil, err
		}
		if step.Action.Kind == ActNavigate && i < len(steps)-1 {
			c.rule(field+".action", "navigate must be the last step", RuleNavigateLast)
		}
		r.Steps = append(r.Steps, step)
	}
	return &p, c.done()
}

// ParseObserve decodes and checks the params of browser.observe.
func ParseObserve(data []byte) (*ObserveParams, error) {
	c := &checker{}
	obj, err := c.object(data, "")
	if err != nil {
		return nil, err
	}
	if err := c.keys(obj, "", []string{"sessionId", "leaseId"}, []string{"cursor", "rootRef", "query", "frame"}); err != nil {
		return nil, err
	}
	var p ObserveParams
	if p.SessionID, err = c.str(obj, "", "sessionId", 1, 256); err != nil {
		return nil, err
	}
	if p.LeaseID, err = c.str(obj, "", "leaseId", 1, 256); err != nil {
		return nil, err
	}
	if _, ok := obj["cursor"]; ok {
		if p.Cursor, err = c.str(obj, "", "cursor", 0, 128); err != nil {
			return nil, err
		}
	}
	if _, ok := obj["rootRef"]; ok {
		if p.RootRef, err = c.str(obj, "", "rootRef", 1, 128); err != nil {
			return nil, err
		}
	}
	if raw, ok := obj["query"]; ok {
		q, err := c.object(raw, "query")
		if err != nil {
			return nil, err
		}
		if err := c.keys(q, "query", []string{"name"}, []string{"role"}); err != nil {
			return nil, err
		}
		p.Query = &Query{}
		if p.Query.Name, err = c.nonblank(q, "query", "name", 1, MaxNameLength); err != nil {
			return nil, err
		}
		if _, ok := q["role"]; ok {
			if p.Query.Role, err = c.str(q, "query", "role", 0, 80); err != nil {
				return nil, err
			}
			if !validRole(p.Query.Role) {
				return nil, shapeErr("query.role", "must be a letter, then letters and digits")
			}
		}
	}
	if p.Frame, err = c.frame(obj, ""); err != nil {
		return nil, err
	}
	return &p, c.done()
}

func validRole(s string) bool {
	for i, r := range s {
		letter := r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z'
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

// Which expectation kinds each action kind allows (shapes.go says the same
// to the schema).
var allowedExpectations = map[string][]string{
	ActCheck:    {ExpectURL, ExpectText, ExpectState},
	ActScroll:   {ExpectURL, ExpectText, ExpectState},
	ActWheel:    {ExpectURL, ExpectText, ExpectState},
	ActNavigate: {ExpectURL, ExpectText},
}

// actionFields lists each action kind's required and optional fields
// besides kind and expected.
var actionFields = map[string][2][]string{
	ActCheck:    {{"ref", "checked"}, nil},
	ActClick:    {{"ref"}, nil},
	ActFill:     {{"ref", "text"}, nil},
	ActType:     {{"ref", "text"}, nil},
	ActAppend:   {{"ref", "text"}, nil},
	ActPress:    {{"ref", "key"}, {"shift"}},
	ActScroll:   {{"deltaX", "deltaY"}, {"ref"}},
	ActWheel:    {{"ref", "deltaX", "deltaY"}, nil},
	ActNavigate: {{"url"}, nil},
	ActSelect:   {{"ref"}, {"option", "value"}}, // exactly one of them
	ActDblclick: {{"ref"}, nil},
	ActHover:    {{"ref"}, nil},
	ActChord:    {{"ref", "key", "modifiers"}, nil},
	ActDrag:     {{"ref"}, {"toRef", "deltaX", "deltaY"}}, // toRef, or both deltas
	ActClickAt:  {{"ref", "x", "y"}, nil},
}

// FrameActions are the action kinds allowed in a child frame.
var FrameActions = []string{ActClick, ActFill, ActType, ActAppend, ActPress, ActDblclick, ActHover, ActChord, ActDrag, ActClickAt}

// ExpectationAllowed reports whether an action kind may carry an
// expectation kind.
func ExpectationAllowed(action, expectation string) bool {
	if allowed, ok := allowedExpectations[action]; ok {
		return slices.Contains(allowed, expectation)
	}
	return expectation == ExpectValue || expectation == ExpectURL || expectation == ExpectText || expectation == ExpectState
}

func (c *checker) actionRequest(req object, field string, r *ActionRequest) error {
	if err := c.keys(req, field, []string{"requestId", "leaseId", "documentEpoch", "action"}, []string{"timeoutMs", "frame", "since"}); err != nil {
		return err
	}
	if err := c.requestIDs(req, field, &r.RequestID, &r.LeaseID, &r.DocumentEpoch); err != nil {
		return err
	}
	var err error
	if _, ok := req["since"]; ok {
		if r.Since, err = c.str(req, field, "since", 1, 128); err != nil {
			return err
		}
	}
	if r.TimeoutMs, err = c.optInt(req, field, "timeoutMs", 1, 30_000); err != nil {
		return err
	}
	if r.Frame, err = c.frame(req, field); err != nil {
		return err
	}
	a, err := c.object(req["action"], field+".action")
	if err != nil {
		return err
	}
	if err := c.action(a, field+".action", &r.Action); err != nil {
		return err
	}
	if f := r.Frame; f != nil {
		if f.DocumentEpoch != r.DocumentEpoch {
			c.rule(field+".frame.documentEpoch", "must equal documentEpoch", RuleFrameEpoch)
		}
		if !slices.Contains(FrameActions, r.Action.Kind) {
			c.rule(field+".action.kind", "cannot act in a frame", RuleFrameAction)
		}
		if e := r.Action.Expected; e != nil && e.Kind != ExpectText {
			c.rule(field+".action.expected.kind", "must be text in a frame", RuleFrameAction)
		}
	}
	return nil
}

// requestIDs checks the three IDs an action or batch request names.
func (c *checker) requestIDs(req object, field string, requestID, leaseID, epoch *string) error {
	var err error
	if *requestID, err = c.str(req, field, "requestId", 1, 128); err != nil {
		return err
	}
	if strings.HasPrefix(*requestID, "batch:") {
		c.rule(field+".requestId", `must not start with "batch:"`, RuleReservedID)
	}
	if *leaseID, err = c.str(req, field, "leaseId", 1, 256); err != nil {
		return err
	}
	*epoch, err = c.str(req, field, "documentEpoch", 1, 512)
	return err
}

func (c *checker) frame(obj object, parent string) (*FrameSelector, error) {
	raw, ok := obj["frame"]
	if !ok {
		return nil, nil
	}
	field := join(parent, "frame")
	f, err := c.object(raw, field)
	if err != nil {
		return nil, err
	}
	if err := c.keys(f, field, []string{"frameId", "documentEpoch"}, nil); err != nil {
		return nil, err
	}
	var sel FrameSelector
	if sel.FrameID, err = c.str(f, field, "frameId", 1, 128); err != nil {
		return nil, err
	}
	if sel.DocumentEpoch, err = c.str(f, field, "documentEpoch", 1, 512); err != nil {
		return nil, err
	}
	return &sel, nil
}

func (c *checker) action(a object, field string, out *Action) error {
	kind, err := c.str(a, field, "kind", 0, -1)
	if err != nil {
		return err
	}
	fields, ok := actionFields[kind]
	if !ok {
		return shapeErr(field+".kind", "is not an action kind")
	}
	required := append([]string{"kind"}, fields[0]...)
	if err := c.keys(a, field, required, append([]string{"expected"}, fields[1]...)); err != nil {
		return err
	}
	out.Kind = kind
	if _, ok := a["ref"]; ok {
		if out.Ref, err = c.str(a, field, "ref", 1, 128); err != nil {
			return err
		}
	}
	switch kind {
	case ActCheck:
		b, err := c.boolean(a, field, "checked")
		if err != nil {
			return err
		}
		out.Checked = &b
	case ActFill, ActType, ActAppend:
		t, err := c.str(a, field, "text", 0, MaxActionText)
		if err != nil {
			return err
		}
		out.Text = &t
	case ActPress:
		if out.Key, err = c.str(a, field, "key", 0, -1); err != nil {
			return err
		}
		if !NamedKeys[out.Key] {
			return shapeErr(field+".key", "is not a named key")
		}
		if _, ok := a["shift"]; ok {
			b, err := c.boolean(a, field, "shift")
			if err != nil {
				return err
			}
			out.Shift = &b
		}
	case ActScroll, ActWheel:
		if err := c.deltas(a, field, out); err != nil {
			return err
		}
	case ActNavigate:
		if out.URL, err = c.str(a, field, "url", 1, MaxURL); err != nil {
			return err
		}
	case ActSelect:
		_, byLabel := a["option"]
		_, byValue := a["value"]
		if byLabel == byValue {
			return shapeErr(field, "select takes option or value")
		}
		if byLabel {
			o, err := c.str(a, field, "option", 1, MaxOptionLabel)
			if err != nil {
				return err
			}
			out.Option = &o
		} else {
			v, err := c.str(a, field, "value", 0, MaxOptionValue)
			if err != nil {
				return err
			}
			out.Value = &v
		}
	case ActChord:
		if err := c.chord(a, field, out); err != nil {
			return err
		}
	case ActDrag:
		_, to := a["toRef"]
		_, dx := a["deltaX"]
		_, dy := a["deltaY"]
		switch {
		case to && !dx && !dy:
			if out.ToRef, err = c.str(a, field, "toRef", 1, 128); err != nil {
				return err
			}
		case !to && dx && dy:
			if err := c.deltas(a, field, out); err != nil {
				return err
			}
		default:
			return shapeErr(field, "drag takes toRef, or deltaX and deltaY")
		}
	case ActClickAt:
		x, err := c.integer(a, field, "x", 0, MaxPointOffset)
		if err != nil {
			return err
		}
		y, err := c.integer(a, field, "y", 0, MaxPointOffset)
		if err != nil {
			return err
		}
		out.X, out.Y = &x, &y
	}
	if raw, ok := a["expected"]; ok {
		e, err := c.object(raw, field+".expected")
		if err != nil {
			return err
		}
		if out.Expected, err = c.expected(e, field+".expected", kind); err != nil {
			return err
		}
	}
	return nil
}

// deltas reads the deltaX and deltaY of a scroll, wheel or drag: integers
// within MaxScrollDelta, not both 0.
func (c *checker) deltas(a object, field string, out *Action) error {
	dx, err := c.integer(a, field, "deltaX", -MaxScrollDelta, MaxScrollDelta)
	if err != nil {
		return err
	}
	dy, err := c.integer(a, field, "deltaY", -MaxScrollDelta, MaxScrollDelta)
	if err != nil {
		return err
	}
	if dx == 0 && dy == 0 {
		return shapeErr(field, "deltaX and deltaY must not both be 0")
	}
	out.DeltaX, out.DeltaY = &dx, &dy
	return nil
}

// chord reads a chord's key and modifiers: a named key with at least one
// modifier, or exactly one character (neither a control character nor
// white space: those are named keys) with any; modifiers each at most once.
func (c *checker) chord(a object, field string, out *Action) error {
	var err error
	if out.Key, err = c.str(a, field, "key", 0, -1); err != nil {
		return err
	}
	mods, err := c.array(a["modifiers"], join(field, "modifiers"), 0, len(Modifiers))
	if err != nil {
		return err
	}
	out.Modifiers = []string{}
	for i, raw := range mods {
		var m string
		if json.Unmarshal(raw, &m) != nil || !slices.Contains(Modifiers, m) {
			return shapeErr(fmt.Sprintf("%s.modifiers[%d]", field, i), "is not a modifier")
		}
		if slices.Contains(out.Modifiers, m) {
			return shapeErr(join(field, "modifiers"), "names "+m+" twice")
		}
		out.Modifiers = append(out.Modifiers, m)
	}
	if NamedKeys[out.Key] {
		if len(out.Modifiers) == 0 {
			return shapeErr(join(field, "modifiers"), "must name a modifier with a named key")
		}
		return nil
	}
	if utf8.RuneCountInString(out.Key) != 1 || !KeyCharacter(out.Key) {
		return shapeErr(join(field, "key"), "is not a named key or one character")
	}
	if utf16Len(out.Key) > 1 {
		c.rule(join(field, "key"), "must be one UTF-16 unit", RuleUTF16)
	}
	return nil
}

// KeyCharacter reports whether s is a character a chord may press: one
// that is neither a control character nor white space.
func KeyCharacter(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n == len(s) && n > 0 && !unicode.IsControl(r) && !unicode.IsSpace(r)
}

func (c *checker) expected(e object, field, action string) (*Expected, error) {
	kind, err := c.str(e, field, "kind", 0, -1)
	if err != nil {
		return nil, err
	}
	if !ExpectationAllowed(action, kind) {
		return nil, shapeErr(field+".kind", "is not an expectation "+action+" allows")
	}
	out := &Expected{Kind: kind}
	switch kind {
	case ExpectValue:
		if err := c.keys(e, field, []string{"kind", "value"}, nil); err != nil {
			return nil, err
		}
		v, err := c.str(e, field, "value", 0, MaxActionText)
		if err != nil {
			return nil, err
		}
		out.Value = &v
	case ExpectURL:
		if err := c.keys(e, field, []string{"kind", "url"}, nil); err != nil {
			return nil, err
		}
		if out.URL, err = c.str(e, field, "url", 1, MaxURL); err != nil {
			return nil, err
		}
	case ExpectText:
		if err := c.keys(e, field, []string{"kind", "text"}, nil); err != nil {
			return nil, err
		}
		if out.Text, err = c.nonblank(e, field, "text", 1, MaxExpectedText); err != nil {
			return nil, err
		}
	case ExpectState:
		if err := c.keys(e, field, []string{"kind", "ref", "state"}, nil); err != nil {
			return nil, err
		}
		if out.Ref, err = c.str(e, field, "ref", 1, 128); err != nil {
			return nil, err
		}
		if out.State, err = c.str(e, field, "state", 0, -1); err != nil {
			return nil, err
		}
		if !slices.Contains(ElementStates, out.State) {
			return nil, shapeErr(field+".state", "is not an element state")
		}
	}
	return out, nil
}

// checker checks one params value. A mismatch with the schema returns at
// once; a rule past the schema is kept (the first one) and returned by done
// only when nothing else is wrong.
type checker struct{ broken *ParamsError }

type object map[string]json.RawMessage

func shapeErr(field, reason string) error { return &ParamsError{Field: field, Reason: reason} }

func (c *checker) rule(field, reason, rule string) {
	if c.broken == nil {
		c.broken = &ParamsError{Field: field, Reason: reason, Rule: rule}
	}
}

func (c *checker) done() error {
	if c.broken != nil {
		return c.broken
	}
	return nil
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func (c *checker) object(raw json.RawMessage, field string) (object, error) {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' {
		return nil, shapeErr(field, "must be an object")
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, shapeErr(field, "is not JSON")
	}
	return o, nil
}

func (c *checker) array(raw json.RawMessage, field string, lo, hi int) ([]json.RawMessage, error) {
	raw = bytes.Trim(raw, " \t\r\n")
	var a []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &a) != nil {
		return nil, shapeErr(field, "must be an array")
	}
	if len(a) < lo || len(a) > hi {
		return nil, shapeErr(field, fmt.Sprintf("must hold %d to %d items", lo, hi))
	}
	return a, nil
}

// keys checks that obj has every required key and no key outside required
// and optional.
func (c *checker) keys(obj object, field string, required, optional []string) error {
	for _, k := range required {
		if _, ok := obj[k]; !ok {
			return shapeErr(join(field, k), "is required")
		}
	}
	for k := range obj {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			return shapeErr(join(field, k), "is not allowed")
		}
	}
	return nil
}

// str returns a string member of lo..hi characters (hi < 0: unbounded). The
// schema counts code points; the UTF-16 count is a rule past it.
func (c *checker) str(obj object, parent, key string, lo, hi int) (string, error) {
	field := join(parent, key)
	raw := bytes.Trim(obj[key], " \t\r\n")
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", shapeErr(field, "must be a string")
	}
	if hi < 0 {
		return s, nil
	}
	if n := utf8.RuneCountInString(s); n < lo || n > hi {
		return "", shapeErr(field, fmt.Sprintf("must be %d to %d characters", lo, hi))
	}
	if n := utf16Len(s); n > hi {
		c.rule(field, fmt.Sprintf("must be at most %d UTF-16 units", hi), RuleUTF16)
	}
	return s, nil
}

// nonblank is str for a string that must not be all white space.
func (c *checker) nonblank(obj object, parent, key string, lo, hi int) (string, error) {
	s, err := c.str(obj, parent, key, lo, hi)
	if err == nil && Blank(s) {
		return "", shapeErr(join(parent, key), "must not be blank")
	}
	return s, err
}

func (c *checker) boolean(obj object, parent, key string) (bool, error) {
	switch string(bytes.Trim(obj[key], " \t\r\n")) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, shapeErr(join(parent, key), "must be a boolean")
}

// integer returns an integer member within lo..hi. As in JSON Schema, any
// number with no fractional part is an integer (1.0, 1e3, -0).
func (c *checker) integer(obj object, parent, key string, lo, hi int) (int, error) {
	raw := bytes.Trim(obj[key], " \t\r\n")
	var num json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || dec.Decode(&num) != nil {
		return 0, shapeErr(join(parent, key), "must be an integer")
	}
	r, ok := new(big.Rat).SetString(num.String())
	if !ok || !r.IsInt() {
		return 0, shapeErr(join(parent, key), "must be an integer")
	}
	if r.Cmp(big.NewRat(int64(lo), 1)) < 0 || r.Cmp(big.NewRat(int64(hi), 1)) > 0 {
		return 0, shapeErr(join(parent, key), fmt.Sprintf("must be %d to %d", lo, hi))
	}
	return int(r.Num().Int64()), nil
}

func (c *checker) optInt(obj object, parent, key string, lo, hi int) (*int, error) {
	if _, ok := obj[key]; !ok {
		return nil, nil
	}
	n, err := c.integer(obj, parent, key, lo, hi)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// utf16Len counts UTF-16 code units, the unit of the reference's bounds.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}
