package appchat_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/dsh-browser/broker/snug/appchat"
)

// TestEveryIntentHasALane holds the map to the spec's table: each of the
// eight intents has its lane, and nothing else has one.
func TestEveryIntentHasALane(t *testing.T) {
	want := map[appchat.Intent]appchat.Lane{
		"data_read": "data", "data_write": "data",
		"schema_change": "feature", "app_change": "feature",
		"provider_read": "provider", "provider_write": "provider",
		"app_question": "answer", "other": "answer",
	}
	if len(appchat.Intents) != 8 {
		t.Fatalf("%d intents", len(appchat.Intents))
	}
	for _, i := range appchat.Intents {
		lane, ok := appchat.LaneOf(i)
		if !ok {
			t.Errorf("intent %s has no lane", i)
		}
		if lane != want[i] {
			t.Errorf("intent %s goes to %q, want %q", i, lane, want[i])
		}
		delete(want, i)
	}
	if len(want) != 0 {
		t.Errorf("intents missing from Intents: %v", want)
	}
	for _, i := range []appchat.Intent{"", "clarify", "schedule", "DATA_READ", "data_read "} {
		if lane, ok := appchat.LaneOf(i); ok {
			t.Errorf("%q routes to %s", i, lane)
		}
	}
}

func TestClarifyIsShort(t *testing.T) {
	if n := len(utf16.Encode([]rune(appchat.Clarify))); n > appchat.MaxClarifyChars || n == 0 {
		t.Fatalf("the clarifying reply has %d characters", n)
	}
}

func TestParseClassification(t *testing.T) {
	for _, i := range appchat.Intents {
		got, err := appchat.ParseClassification(fmt.Sprintf(`{"intent":%q,"confidence":0.9}`, i))
		if err != nil || got != i {
			t.Errorf("%s: %q %v", i, got, err)
		}
	}
	for _, tc := range []struct {
		name, reply string
		ok          bool
	}{
		{"at the confidence bound", `{"intent":"data_read","confidence":0.6}`, true},
		{"fenced", "Sure:\n```json\n{\"intent\":\"data_write\",\"confidence\":1}\n```", true},
		{"just under the bound", `{"intent":"data_read","confidence":0.59}`, false},
		{"no confidence", `{"intent":"data_read"}`, false},
		{"confidence over 1", `{"intent":"data_read","confidence":1.01}`, false},
		{"negative confidence", `{"intent":"data_read","confidence":-1}`, false},
		{"confidence as text", `{"intent":"data_read","confidence":"high"}`, false},
		{"unknown intent", `{"intent":"schedule","confidence":0.9}`, false},
		{"clarify is no intent", `{"intent":"clarify","confidence":0.9}`, false},
		{"intent in capitals", `{"intent":"APP_CHANGE","confidence":0.9}`, false},
		{"no intent", `{"confidence":0.9}`, false},
		{"intent not text", `{"intent":3,"confidence":0.9}`, false},
		{"an extra member", `{"intent":"data_read","confidence":0.9,"lane":"feature"}`, false},
		{"prose", `I think the user wants to read data.`, false},
		{"an object in text (the reply contract's tolerance)", `[{"intent":"data_read","confidence":0.9}]`, true},
		{"empty", ``, false},
	} {
		got, err := appchat.ParseClassification(tc.reply)
		if tc.ok != (err == nil) {
			t.Errorf("%s: %q %v", tc.name, got, err)
		}
		if err != nil && (!errors.Is(err, appchat.ErrUnusable) || got != "") {
			t.Errorf("%s: %q %v, want ErrUnusable and no intent", tc.name, got, err)
		}
	}
}

func TestParseStatementsBounds(t *testing.T) {
	stmts := func(n, size int) string {
		var list []string
		for range n {
			list = append(list, fmt.Sprintf("%q", "DELETE FROM t WHERE x = '"+strings.Repeat("a", size-len("DELETE FROM t WHERE x = ''"))+"'"))
		}
		return `{"statements":[` + strings.Join(list, ",") + `],"summary":"s"}`
	}
	for _, tc := range []struct {
		n, size int
		ok      bool
	}{
		{1, 40, true}, {appchat.MaxStatements, 40, true}, {appchat.MaxStatements + 1, 40, false},
		{0, 40, false}, {1, appchat.MaxSQLChars, true}, {1, appchat.MaxSQLChars + 1, false},
	} {
		p, err := appchat.ParseStatements(stmts(tc.n, tc.size))
		if tc.ok != (err == nil) || tc.ok && (len(p.Statements) != tc.n || len(p.Statements[0]) != tc.size) {
			t.Errorf("%d statements of %d: %d %v", tc.n, tc.size, len(p.Statements), err)
		}
	}
	for _, bad := range []string{`{"statements":[""]}`, `{"statements":["  "]}`, `{"statements":"DELETE FROM t"}`, `{"sql":"DELETE FROM t"}`, `{"statements":["DELETE FROM t"],"run":true}`} {
		if _, err := appchat.ParseStatements(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	p, err := appchat.ParseStatements(`{"statements":["  UPDATE t SET x = 1  "],"summary":"  sets x  "}`)
	if err != nil || p.Statements[0] != "UPDATE t SET x = 1" || p.Summary != "sets x" {
		t.Fatalf("%+v %v", p, err)
	}
}

func TestParseQueryVersionAnswer(t *testing.T) {
	if q, err := appchat.ParseQuery(`{"sql":" SELECT 1 "}`); err != nil || q != "SELECT 1" {
		t.Errorf("query %q %v", q, err)
	}
	for _, bad := range []string{`{"sql":""}`, `{"query":"SELECT 1"}`, `SELECT 1`} {
		if _, err := appchat.ParseQuery(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	v, err := appchat.ParseVersion(`{"html":"<p>hi</p>","note":"greets"}`, 9)
	if err != nil || v.HTML != "<p>hi</p>" || v.Note != "greets" {
		t.Errorf("version %+v %v", v, err)
	}
	if _, err := appchat.ParseVersion(`{"html":"<p>hi!</p>"}`, 9); err == nil {
		t.Error("a version past the bound was accepted")
	}
	if _, err := appchat.ParseVersion(`{"html":"  "}`, 9); err == nil {
		t.Error("an empty version was accepted")
	}
	if a, err := appchat.ParseAnswer("  Two books.  "); err != nil || a != "Two books." {
		t.Errorf("answer %q %v", a, err)
	}
	if a, _ := appchat.ParseAnswer(strings.Repeat("x", appchat.MaxAnswerChars+1)); len(a) != appchat.MaxAnswerChars+len("…") {
		t.Errorf("a long answer kept %d bytes", len(a))
	}
	if _, err := appchat.ParseAnswer(" \n "); err == nil {
		t.Error("an empty answer was accepted")
	}
}

func TestBoundRows(t *testing.T) {
	rows := func(n int) [][]any {
		out := make([][]any, n)
		for i := range out {
			out[i] = []any{int64(i), "x"}
		}
		return out
	}
	r := appchat.Bound([]string{"n", "v"}, rows(appchat.MaxResultRows), false)
	if len(r.Rows) != appchat.MaxResultRows || r.Truncated != "" {
		t.Fatalf("at the row bound: %d rows, %q", len(r.Rows), r.Truncated)
	}
	if lines := strings.Count(r.Text, "\n"); lines != appchat.MaxResultRows {
		t.Fatalf("%d lines", lines)
	}
	for _, tc := range []struct {
		rows int
		more bool
	}{{appchat.MaxResultRows + 1, false}, {appchat.MaxResultRows, true}} {
		r := appchat.Bound([]string{"n", "v"}, rows(tc.rows), tc.more)
		if len(r.Rows) != appchat.MaxResultRows || !strings.Contains(r.Truncated, "more than 200 rows") {
			t.Errorf("past the row bound (%d, more %v): %d rows, %q", tc.rows, tc.more, len(r.Rows), r.Truncated)
		}
	}
}

func TestBoundBytes(t *testing.T) {
	// Rows of one text value fill the result to exactly MaxResultBytes:
	// the header ["v"] (5 bytes), then per row a newline and ["…"].
	fill := func(extra int) [][]any {
		var out [][]any
		size := len(`["v"]`)
		for size+1+len(`[""]`)+1000 <= appchat.MaxResultBytes-2000 {
			out = append(out, []any{strings.Repeat("a", 1000)})
			size += 1 + len(`[""]`) + 1000
		}
		last := appchat.MaxResultBytes - size - 1 - len(`[""]`) + extra
		return append(out, []any{strings.Repeat("b", last)})
	}
	exact := fill(0)
	r := appchat.Bound([]string{"v"}, exact, false)
	if len(r.Text) != appchat.MaxResultBytes || len(r.Rows) != len(exact) || r.Truncated != "" {
		t.Fatalf("at the byte bound: %d bytes, %d of %d rows, %q", len(r.Text), len(r.Rows), len(exact), r.Truncated)
	}
	over := fill(1)
	r = appchat.Bound([]string{"v"}, over, false)
	want := fmt.Sprintf("only the first %d of %d rows fit in 32 KiB", len(over)-1, len(over))
	if len(r.Rows) != len(over)-1 || len(r.Text) > appchat.MaxResultBytes || !strings.Contains(r.Truncated, want) {
		t.Fatalf("past the byte bound: %d bytes, %d rows, %q", len(r.Text), len(r.Rows), r.Truncated)
	}
}

func TestBoundCells(t *testing.T) {
	r := appchat.Bound([]string{"b", "t", "n"}, [][]any{{[]byte{0, 0xff}, strings.Repeat("é", 5000), nil}}, false)
	row := r.Rows[0]
	if row[0] != "X'00ff'" || row[2] != nil || !strings.HasSuffix(row[1].(string), "…") || len([]rune(row[1].(string))) != 4097 {
		t.Fatalf("cells %q", row)
	}
	if !strings.Contains(r.Truncated, "were cut") {
		t.Fatalf("the cut is not said: %q", r.Truncated)
	}
	big := appchat.Bound([]string{"b"}, [][]any{{make([]byte, 100)}}, false)
	if s := big.Rows[0][0].(string); !strings.HasSuffix(s, "… (100 bytes)") || !slices.Contains([]int{len("X''") + 128 + len("… (100 bytes)")}, len(s)) {
		t.Fatalf("a long blob: %q", s)
	}
}
