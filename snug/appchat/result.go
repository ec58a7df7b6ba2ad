package appchat

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-browser/broker/snug/frame"
)

// Bounds on a query result before it re-enters the model's context (the
// reference's 200 rows / 32 KiB).
const (
	MaxResultRows  = 200
	MaxResultBytes = 32 << 10
	// maxCellChars bounds one value, so that one long text cannot take
	// the whole result.
	maxCellChars = 4096
	// maxBlobBytes bounds the bytes of a blob shown in hex.
	maxBlobBytes = 64
)

// Result is a query result as the model sees it.
type Result struct {
	Columns []string
	// Rows are the rows that fit, their cells as Text shows them (nil,
	// int64, float64 or string; a blob as X'…' hex).
	Rows [][]any
	// Text is what enters the model's context: a JSON array of the column
	// names, then one JSON array per row, one per line; at most
	// MaxResultBytes.
	Text string
	// Truncated says, in words, what was left out; "" when nothing was.
	Truncated string
}

// Bound renders a query's columns and rows (at most MaxResultRows of them;
// more says there were more) within MaxResultBytes, saying in band what it
// left out.
func Bound(columns []string, rows [][]any, more bool) Result {
	r := Result{Columns: columns, Rows: [][]any{}}
	head, _ := marshal(columns)
	var b strings.Builder
	b.Write(head)
	clipped := false
	for _, row := range rows {
		if len(r.Rows) == MaxResultRows {
			more = true
			break
		}
		cells := make([]any, len(row))
		for i, c := range row {
			var cut bool
			cells[i], cut = cell(c)
			clipped = clipped || cut
		}
		line, err := marshal(cells)
		if err != nil {
			line = []byte(`["(a row that cannot be shown)"]`)
		}
		if b.Len()+1+len(line) > MaxResultBytes {
			r.Truncated = fmt.Sprintf("only the first %d of %s rows fit in %d KiB; the rest were left out.", len(r.Rows), total(len(rows), more), MaxResultBytes>>10)
			break
		}
		b.WriteByte('\n')
		b.Write(line)
		r.Rows = append(r.Rows, cells)
	}
	if r.Truncated == "" && more {
		r.Truncated = fmt.Sprintf("the query returned more than %d rows; only the first %d are shown.", len(r.Rows), len(r.Rows))
	}
	if clipped {
		r.Truncated = strings.TrimSpace(r.Truncated + fmt.Sprintf(" Values longer than %d characters were cut, ending in …", maxCellChars))
	}
	r.Text = b.String()
	return r
}

// marshal encodes v as JSON without escaping <, > and & (the text stays as
// stored; Untrusted defangs what needs it).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func total(n int, more bool) string {
	if more {
		return fmt.Sprintf("more than %d", n)
	}
	return fmt.Sprint(n)
}

// cell renders one value; cut reports that it was shortened.
func cell(v any) (out any, cut bool) {
	switch x := v.(type) {
	case []byte:
		s := "X'" + hex.EncodeToString(x[:min(len(x), maxBlobBytes)]) + "'"
		if len(x) > maxBlobBytes {
			return s + fmt.Sprintf("… (%d bytes)", len(x)), true
		}
		return s, false
	case string:
		if c := frame.Clip(x, maxCellChars); c != x {
			return c + "…", true
		}
		return x, false
	}
	return v, false
}
