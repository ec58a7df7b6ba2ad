package activity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Field bounds. A record is refused (and, on disk, a line is damaged) when
// a field is longer; [Action] fields are shortened to them instead.
const (
	MaxName   = 100  // characters of a target's accessible name kept
	MaxLabel  = 256  // an agent's label
	MaxTab    = 256  // a tab handle
	MaxOrigin = 2048 // an origin
	MaxToken  = 64   // an action kind, role, key or code
	MaxLine   = 8 << 10
)

// Entry states.
const (
	// StateRunning: asked for, no outcome recorded yet, the broker still
	// running.
	StateRunning = "running"
	// StateDone: the outcome is recorded.
	StateDone = "done"
	// StateInterrupted: the broker stopped before the outcome was
	// recorded. Outcome and dispatch are "unknown": the input may have
	// happened, as a reserved journal record says.
	StateInterrupted = "interrupted"
)

// Outcome and dispatch values, the journal's vocabulary.
var (
	outcomes   = []string{"succeeded", "failed", "cancelled", "unknown"}
	dispatches = []string{"notDispatched", "dispatched", "observed"}
)

// Action is what the runtime tells the log about an action before it runs.
// Only these fields ever reach the log.
type Action struct {
	Agent  string // the client's label ("python3 (pid 4242)")
	Conn   uint64 // the client's connection number in this broker run
	Tab    string // the tab handle
	Origin string // the tab's origin
	Kind   string // click, fill, type, append, press, …
	// Step is a batch step's index, or -1 for a single action.
	Step int
	// Role and Name identify the target as the agent observed it; Name is
	// shortened to MaxName characters.
	Role, Name string
	// TextLength is the length of typed text in characters, or -1 when the
	// action types none. The text itself is never passed.
	TextLength int
	// Key is a press's named key (from the protocol's fixed table).
	Key string
}

// Entry is one action as the log shows it.
type Entry struct {
	ID         uint64    `json:"id"`
	Time       time.Time `json:"time"`
	Agent      string    `json:"agent"`
	Conn       uint64    `json:"conn"`
	Tab        string    `json:"tab"`
	Origin     string    `json:"origin"`
	Kind       string    `json:"kind"`
	Step       *int      `json:"step,omitempty"`
	Role       string    `json:"role,omitempty"`
	Name       string    `json:"name,omitempty"`
	TextLength *int      `json:"textLength,omitempty"`
	Key        string    `json:"key,omitempty"`
	State      string    `json:"state"`
	Outcome    string    `json:"outcome,omitempty"`
	Dispatch   string    `json:"dispatch,omitempty"`
	Code       string    `json:"code,omitempty"`
	EndedAt    time.Time `json:"endedAt,omitzero"`
	// Rev is the log's change counter when the entry last changed (begin,
	// end); it orders changes within one opening of the log (Epoch).
	Rev uint64 `json:"rev"`
}

// Record kinds on disk.
const (
	recBegin       = "begin"
	recEnd         = "end"
	recInterrupted = "interrupted"
)

// record is one line of the file. Field order is the canonical order: a
// line must re-encode to exactly its bytes.
type record struct {
	V          int    `json:"v"`
	Rec        string `json:"rec"`
	ID         uint64 `json:"id"`
	At         int64  `json:"at"` // Unix milliseconds
	Agent      string `json:"agent,omitempty"`
	Conn       uint64 `json:"conn,omitempty"`
	Tab        string `json:"tab,omitempty"`
	Origin     string `json:"origin,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Step       *int   `json:"step,omitempty"`
	Role       string `json:"role,omitempty"`
	Name       string `json:"name,omitempty"`
	TextLength *int   `json:"textLength,omitempty"`
	Key        string `json:"key,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
	Dispatch   string `json:"dispatch,omitempty"`
	Code       string `json:"code,omitempty"`
}

// errRecord is a line that is not a valid record.
var errRecord = errors.New("activity: not a valid record")

// marshalRecord is the canonical line of r, without its newline.
func marshalRecord(r *record) ([]byte, error) {
	if err := validRecord(r); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	line := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(line) >= MaxLine {
		return nil, fmt.Errorf("%w: a line of %d bytes", errRecord, len(line))
	}
	return line, nil
}

// parseRecord decodes one line (without its newline). It accepts only what
// marshalRecord writes.
func parseRecord(line []byte) (*record, error) {
	if len(line) == 0 || len(line) >= MaxLine {
		return nil, fmt.Errorf("%w: a line of %d bytes", errRecord, len(line))
	}
	var r record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %v", errRecord, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data", errRecord)
	}
	again, err := marshalRecord(&r)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, line) {
		return nil, fmt.Errorf("%w: not in canonical form", errRecord)
	}
	return &r, nil
}

// validRecord checks a record's shape: which fields go with which kind of
// record, and every field's vocabulary and bound.
func validRecord(r *record) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", errRecord, why) }
	if r.V != 1 {
		return bad(fmt.Sprintf("version %d", r.V))
	}
	if r.ID == 0 || r.At <= 0 {
		return bad("no id or time")
	}
	begin := r.Agent != "" || r.Conn != 0 || r.Tab != "" || r.Origin != "" || r.Kind != "" || r.Step != nil ||
		r.Role != "" || r.Name != "" || r.TextLength != nil || r.Key != ""
	end := r.Outcome != "" || r.Dispatch != "" || r.Code != ""
	switch r.Rec {
	case recBegin:
		if end {
			return bad("a begin record with an outcome")
		}
		switch {
		case !clean(r.Agent, 1, MaxLabel), !clean(r.Tab, 1, MaxTab), !clean(r.Origin, 1, MaxOrigin):
			return bad("agent, tab or origin")
		case !token(r.Kind, true), !clean(r.Role, 0, MaxToken), !clean(r.Name, 0, MaxName), !token(r.Key, false):
			return bad("kind, role, name or key")
		case r.Step != nil && (*r.Step < 0 || *r.Step > 1000), r.TextLength != nil && *r.TextLength < 0:
			return bad("step or text length")
		}
	case recEnd:
		if begin || !oneOf(r.Outcome, outcomes) || !oneOf(r.Dispatch, dispatches) || !token(r.Code, false) {
			return bad("an end record's fields")
		}
	case recInterrupted:
		if begin || end {
			return bad("an interrupted record with fields")
		}
	default:
		return bad(fmt.Sprintf("record kind %q", r.Rec))
	}
	return nil
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

// token: a short identifier of letters, digits and . _ - (action kinds,
// keys, codes).
func token(s string, required bool) bool {
	if s == "" {
		return !required
	}
	if len(s) > MaxToken {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// clean: valid UTF-8 of min..max characters, with no character [sanitize]
// would replace.
func clean(s string, min, max int) bool {
	n := utf8.RuneCountInString(s)
	return n >= min && n <= max && utf8.ValidString(s) && sanitize(s, max) == s
}

// sanitize makes text safe to show anywhere: invalid UTF-8, control
// characters and bidirectional formatting characters (which could rewrite
// a terminal or reorder a line) become U+FFFD, and text longer than max
// characters is cut to max-1 and "…".
func sanitize(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsControl(r) || isBidi(r) {
			r = '\uFFFD'
		}
		b.WriteRune(r)
		n++
	}
	out := b.String()
	if n > max {
		runes := []rune(out)
		out = string(runes[:max-1]) + "…"
	}
	return out
}

// isBidi reports the bidirectional formatting characters (embeddings,
// overrides, isolates and marks) that can make text display in another
// order than it is stored, and the line and paragraph separators.
func isBidi(r rune) bool {
	return r == 0x061C || r == 0x200E || r == 0x2028 || r == 0x2029 || r == 0x200F || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}

// beginRecord is the record of an action: shortened and sanitized, so that
// it is always valid.
func beginRecord(id uint64, at time.Time, a Action) *record {
	r := &record{V: 1, Rec: recBegin, ID: id, At: at.UnixMilli(),
		Agent: orUnknown(sanitize(a.Agent, MaxLabel)), Conn: a.Conn,
		Tab: orUnknown(sanitize(a.Tab, MaxTab)), Origin: orUnknown(sanitize(a.Origin, MaxOrigin)),
		Kind: a.Kind, Role: sanitize(a.Role, MaxToken), Name: sanitize(a.Name, MaxName), Key: a.Key}
	if !token(r.Kind, true) {
		r.Kind = "unknown"
	}
	if !token(r.Key, false) {
		r.Key = ""
	}
	if a.Step >= 0 && a.Step <= 1000 {
		r.Step = &a.Step
	}
	if a.TextLength >= 0 {
		r.TextLength = &a.TextLength
	}
	return r
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// entryOf is the entry a begin record starts.
func entryOf(r *record) *Entry {
	return &Entry{
		ID: r.ID, Time: time.UnixMilli(r.At).UTC(), Agent: r.Agent, Conn: r.Conn, Tab: r.Tab, Origin: r.Origin,
		Kind: r.Kind, Step: r.Step, Role: r.Role, Name: r.Name, TextLength: r.TextLength, Key: r.Key, State: StateRunning,
	}
}

// apply folds an end or interrupted record into its entry.
func (e *Entry) apply(r *record) {
	e.EndedAt = time.UnixMilli(r.At).UTC()
	if r.Rec == recInterrupted {
		e.State, e.Outcome, e.Dispatch, e.Code = StateInterrupted, "unknown", "unknown", ""
		return
	}
	e.State, e.Outcome, e.Dispatch, e.Code = StateDone, r.Outcome, r.Dispatch, r.Code
}

// records are the lines that describe e, for a rewrite.
func (e *Entry) records() []*record {
	begin := &record{V: 1, Rec: recBegin, ID: e.ID, At: e.Time.UnixMilli(), Agent: e.Agent, Conn: e.Conn, Tab: e.Tab,
		Origin: e.Origin, Kind: e.Kind, Step: e.Step, Role: e.Role, Name: e.Name, TextLength: e.TextLength, Key: e.Key}
	switch e.State {
	case StateDone:
		return []*record{begin, {V: 1, Rec: recEnd, ID: e.ID, At: e.EndedAt.UnixMilli(), Outcome: e.Outcome, Dispatch: e.Dispatch, Code: e.Code}}
	case StateInterrupted:
		return []*record{begin, {V: 1, Rec: recInterrupted, ID: e.ID, At: e.EndedAt.UnixMilli()}}
	}
	return []*record{begin}
}
