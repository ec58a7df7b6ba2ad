package activity

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseRecord: any line is either refused or a valid record whose
// canonical encoding is exactly the line; folding any bytes never panics
// and accounts for every line.
func FuzzParseRecord(f *testing.F) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	begin, _ := marshalRecord(beginRecord(7, at, Action{Agent: "python3 (pid 1)", Conn: 3, Tab: "i:1", Origin: "https://a.test",
		Kind: "fill", Step: 2, Role: "textbox", Name: "Email", TextLength: 13, Key: ""}))
	end, _ := marshalRecord(&record{V: 1, Rec: recEnd, ID: 7, At: at.UnixMilli() + 5, Outcome: "failed", Dispatch: "notDispatched", Code: "STALE_TARGET"})
	cut, _ := marshalRecord(&record{V: 1, Rec: recInterrupted, ID: 7, At: at.UnixMilli() + 9})
	for _, seed := range [][]byte{begin, end, cut, []byte(`{"v":1}`), []byte(`{"v":1,"rec":"end","id":7,"at":1,"outcome":"succeeded","dispatch":"observed","extra":1}`),
		[]byte(`{"v":1,"rec":"begin","id":1,"at":1,"agent":"\u202e","conn":1,"tab":"t","origin":"o","kind":"click"}`)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if r, err := parseRecord(line); err == nil {
			again, err := marshalRecord(r)
			if err != nil || !bytes.Equal(again, line) {
				t.Fatalf("accepted %q, re-encodes to %q (%v)", line, again, err)
			}
			if r.Rec == recBegin && (!utf8.ValidString(r.Name) || sanitize(r.Name, MaxName) != r.Name) {
				t.Fatalf("accepted an unsafe name %q", r.Name)
			}
		}
		file := append(append(append(append([]byte{}, begin...), '\n'), line...), '\n')
		fold, err := foldRecords(bytes.NewReader(file))
		if err != nil || fold.lines != bytes.Count(file, []byte("\n")) || fold.torn != -1 || len(fold.entries) == 0 {
			t.Fatalf("fold of %q: %+v %v", file, fold, err)
		}
	})
}

// FuzzSanitize: whatever goes in, what comes out is valid, bounded and
// free of control and bidi characters.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "Email", "a\x1b[2Jb", "\u202eevil", strings.Repeat("é", 200), "\xff\xfe", "line\u2028break"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := sanitize(s, MaxName)
		if !clean(out, 0, MaxName) {
			t.Fatalf("sanitize(%q) = %q is not clean", s, out)
		}
	})
}
