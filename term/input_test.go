package term

import "testing"

func TestIsReport(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"\x1b[12;40R", true},               // cursor position
		{"\x1b[?1;2c\x1b[>41;354;0c", true}, // device attributes
		{"\x1b]11;rgb:0000/0000/0000\x1b\\", true},
		{"\x1b]10;rgb:ffff/ffff/ffff\x07", true},
		{"\x1bP1$r0m\x1b\\", true},
		{"\x1b[?2004;2$y", true},
		{"\x1b[I", true},
		{"a", false},
		{"\r", false},
		{"\x1b[A", false}, // the Up key
		{"\x1bOP", false}, // F1
		{"\x1b", false},   // Escape
		{"\x1b[12;40Rx", false},
		{"x\x1b[12;40R", false},
		{"", false},
	} {
		if got := isReport([]byte(tc.in)); got != tc.want {
			t.Errorf("isReport(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzIsReport: the classifier never panics, and typing before or after a
// report makes the whole input typing.
func FuzzIsReport(f *testing.F) {
	for _, s := range []string{"\x1b[12;40R", "\x1b[?1;2c", "\x1b]11;rgb:0/0/0\x07", "a", "\x1b[A"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if isReport(p) && (isReport(append([]byte{'k'}, p...)) || isReport(append(p[:len(p):len(p)], 'k'))) {
			t.Fatalf("typing around a report of %q counted as a report", p)
		}
	})
}
