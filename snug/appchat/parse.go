package appchat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dsh-browser/broker/snug/chat"
	"github.com/dsh-browser/broker/snug/frame"
)

// Bounds on what the agent proposes.
const (
	// MaxStatements bounds the statements of one write proposal.
	MaxStatements = 16
	// MaxSQLChars bounds one statement or query.
	MaxSQLChars = 4096
	// MaxSummaryChars bounds a proposal's summary, MaxNoteChars a new
	// version's note, MaxAnswerChars an answer in words.
	MaxSummaryChars = 300
	MaxNoteChars    = 200
	MaxAnswerChars  = 4000
)

// ErrUnusable wraps every reason an agent reply cannot be used.
var ErrUnusable = errors.New("the agent's reply is not usable")

func unusable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnusable, fmt.Sprintf(format, args...))
}

// object reads the reply's JSON object (with the tolerance of the reply
// contract: a fence or text around it) into v, strictly: an unknown member
// is an error.
func object(reply string, v any) error {
	raw, err := chat.ParseReply(reply)
	if err != nil {
		return unusable("no JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return unusable("%v", err)
	}
	return nil
}

// ParseClassification reads the classifier's reply. It fails closed: a
// reply that is not {"intent": …, "confidence": …} with one of the eight
// intents and a confidence of at least [MinConfidence] is [ErrUnusable].
func ParseClassification(reply string) (Intent, error) {
	var c struct {
		Intent     *string  `json:"intent"`
		Confidence *float64 `json:"confidence"`
	}
	if err := object(reply, &c); err != nil {
		return "", err
	}
	if c.Intent == nil {
		return "", unusable("no intent")
	}
	intent := Intent(*c.Intent)
	if _, ok := LaneOf(intent); !ok {
		return "", unusable("%q is not an intent", frame.Clip(*c.Intent, 40))
	}
	switch {
	case c.Confidence == nil:
		return "", unusable("no confidence")
	case math.IsNaN(*c.Confidence) || *c.Confidence < 0 || *c.Confidence > 1:
		return "", unusable("confidence %v is not between 0 and 1", *c.Confidence)
	case *c.Confidence < MinConfidence:
		return "", unusable("confidence %v is below %v", *c.Confidence, MinConfidence)
	}
	return intent, nil
}

// ParseQuery reads the query the agent wrote for a data_read message.
func ParseQuery(reply string) (string, error) {
	var q struct {
		SQL string `json:"sql"`
	}
	if err := object(reply, &q); err != nil {
		return "", err
	}
	sql := strings.TrimSpace(q.SQL)
	if err := checkSQL(sql); err != nil {
		return "", err
	}
	return sql, nil
}

// Proposal is a write the agent proposes: statements to show verbatim.
type Proposal struct {
	Statements []string
	Summary    string
}

// ParseStatements reads the statements the agent wrote for a data_write
// message: 1 to [MaxStatements], each at most [MaxSQLChars].
func ParseStatements(reply string) (Proposal, error) {
	var p struct {
		Statements []string `json:"statements"`
		Summary    string   `json:"summary"`
	}
	if err := object(reply, &p); err != nil {
		return Proposal{}, err
	}
	if len(p.Statements) == 0 || len(p.Statements) > MaxStatements {
		return Proposal{}, unusable("%d statements (1 to %d)", len(p.Statements), MaxStatements)
	}
	out := Proposal{Summary: frame.Clip(strings.TrimSpace(p.Summary), MaxSummaryChars)}
	for _, s := range p.Statements {
		s = strings.TrimSpace(s)
		if err := checkSQL(s); err != nil {
			return Proposal{}, err
		}
		out.Statements = append(out.Statements, s)
	}
	return out, nil
}

func checkSQL(s string) error {
	if s == "" {
		return unusable("an empty statement")
	}
	if n := len([]rune(s)); n > MaxSQLChars {
		return unusable("a statement of %d characters (at most %d)", n, MaxSQLChars)
	}
	return nil
}

// Version is a new version of the app's code the agent wrote.
type Version struct {
	HTML string
	Note string
}

// ParseVersion reads the feature lane's reply: the whole new HTML, at most
// maxBytes of it.
func ParseVersion(reply string, maxBytes int) (Version, error) {
	var v struct {
		HTML string `json:"html"`
		Note string `json:"note"`
	}
	if err := object(reply, &v); err != nil {
		return Version{}, err
	}
	if strings.TrimSpace(v.HTML) == "" {
		return Version{}, unusable("no HTML")
	}
	if len(v.HTML) > maxBytes {
		return Version{}, unusable("HTML of %d bytes (at most %d)", len(v.HTML), maxBytes)
	}
	return Version{HTML: v.HTML, Note: frame.Clip(strings.TrimSpace(v.Note), MaxNoteChars)}, nil
}

// ParseAnswer reads an answer in words: trimmed, at most [MaxAnswerChars].
func ParseAnswer(reply string) (string, error) {
	text := strings.TrimSpace(reply)
	if text == "" {
		return "", unusable("an empty answer")
	}
	if clipped := frame.Clip(text, MaxAnswerChars); clipped != text {
		return clipped + "…", nil
	}
	return text, nil
}
