package userdb

// countStatements returns how many non-empty SQL statements text holds, by
// SQLite's own rule for where a statement ends (the state machine of
// sqlite3_complete: a ";" ends a statement except inside a CREATE TRIGGER
// body, which ends at "END;"). Strings, quoted identifiers and comments are
// skipped; an unterminated one runs to the end of the text. The fuzz test
// checks it against SQLite's sqlite3_complete.
func countStatements(text string) int {
	n, _ := walk(text)
	return n
}

// complete is sqlite3_complete: whether text ends with a complete
// statement (an unterminated string or block comment never does).
func complete(text string) bool {
	_, ok := walk(text)
	return ok
}

func walk(text string) (n int, complete bool) {
	state := stateInvalid
	open := false // an unterminated string or block comment
	for i := 0; i < len(text); i++ {
		var tok int
		switch c := text[i]; c {
		case ';':
			tok = tkSemi
		case ' ', '\r', '\t', '\n', '\f':
			tok = tkWS
		case '/':
			if i+1 >= len(text) || text[i+1] != '*' {
				tok = tkOther
				break
			}
			end := indexFrom(text, i+2, "*/")
			if end < 0 {
				i, open = len(text), true
				continue
			}
			i, tok = end+1, tkWS
		case '-':
			if i+1 >= len(text) || text[i+1] != '-' {
				tok = tkOther
				break
			}
			end := indexFrom(text, i, "\n")
			if end < 0 {
				i, open = len(text), true // as sqlite3_complete: no newline, not complete
				continue
			}
			i, tok = end, tkWS
		case '[', '`', '"', '\'':
			closer := string(c)
			if c == '[' {
				closer = "]"
			}
			end := indexFrom(text, i+1, closer)
			if end < 0 {
				i, open = len(text), true
				state = trans[state][tkOther]
				continue
			}
			i, tok = end, tkOther
		default:
			if !idChar(c) {
				tok = tkOther
				break
			}
			j := i + 1
			for j < len(text) && idChar(text[j]) {
				j++
			}
			tok = keyword(text[i:j])
			i = j - 1
		}
		next := trans[state][tok]
		if tok == tkSemi && next == stateStart && state != stateStart && state != stateInvalid {
			n++
		}
		state = next
	}
	if state != stateStart && state != stateInvalid {
		n++ // a last statement without its ";"
	}
	return n, state == stateStart && !open
}

func indexFrom(s string, from int, sub string) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func idChar(c byte) bool {
	return c >= 0x80 || c == '_' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func keyword(w string) int {
	switch len(w) {
	case 3:
		if eqFold(w, "end") {
			return tkEnd
		}
	case 4:
		if eqFold(w, "temp") {
			return tkTemp
		}
	case 6:
		if eqFold(w, "create") {
			return tkCreate
		}
	case 7:
		if eqFold(w, "trigger") {
			return tkTrigger
		}
		if eqFold(w, "explain") {
			return tkExplain
		}
	case 9:
		if eqFold(w, "temporary") {
			return tkTemp
		}
	}
	return tkOther
}

// eqFold compares ASCII case-insensitively (SQLite's keywords are ASCII).
func eqFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

const (
	tkSemi = iota
	tkWS
	tkOther
	tkExplain
	tkCreate
	tkTemp
	tkTrigger
	tkEnd
)

const (
	stateInvalid = iota
	stateStart
	stateNormal
	stateExplain
	stateCreate
	stateTrigger
	stateSemi
	stateEnd
)

// trans is sqlite3_complete's transition table: trans[state][token].
var trans = [8][8]int{
	//                SEMI WS OTHER EXPLAIN CREATE TEMP TRIGGER END
	stateInvalid: {1, 0, 2, 3, 4, 2, 2, 2},
	stateStart:   {1, 1, 2, 3, 4, 2, 2, 2},
	stateNormal:  {1, 2, 2, 2, 2, 2, 2, 2},
	stateExplain: {1, 3, 3, 2, 4, 2, 2, 2},
	stateCreate:  {1, 4, 2, 2, 2, 4, 5, 2},
	stateTrigger: {6, 5, 5, 5, 5, 5, 5, 5},
	stateSemi:    {6, 6, 5, 5, 5, 5, 5, 7},
	stateEnd:     {1, 7, 5, 5, 5, 5, 5, 5},
}
