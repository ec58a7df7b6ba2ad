package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

// Tabs lists an instance's tabs through the provider's tabs.list, keeping
// only credential-free HTTP(S) tabs of that instance (and, in restricted
// mode with --allow-origin, only allowlisted origins).
func (r *Runtime) Tabs(ctx context.Context, _ Client, params json.RawMessage) (any, error) {
	in, err := decodeTabsParams(params)
	if err != nil {
		return nil, err
	}
	if !bounded(in.SessionID, 1, 256) || !bounded(in.InstanceID, 1, 256) {
		return nil, invalid()
	}
	prov, err := r.provider(in.InstanceID)
	if err != nil {
		return nil, err
	}
	raw, err := prov.CallWithin(ctx, ProviderTimeout, browser.ProviderTabsList, nil) // {}, without encoding/json
	if err != nil {
		return nil, err
	}
	kept, err := r.keepTabs(raw, in.InstanceID)
	if err != nil {
		return nil, providerErr(browser.ProviderTabsList, err)
	}
	return kept, nil
}

// keptTabs is browser.tabs's value: the JSON of each tab that listTabs
// would keep, in order, for its value to be json.Marshal's of that list
// (rpc.JSONAppender); null for the provider's null.
type keptTabs struct {
	null bool
	tabs [][]byte
}

func (k *keptTabs) MarshalJSON() ([]byte, error) { return k.AppendJSON(nil), nil }

func (k *keptTabs) AppendJSON(b []byte) []byte {
	if k.null {
		return append(b, "null"...)
	}
	n := 2 + len(k.tabs)
	for _, t := range k.tabs {
		n += len(t)
	}
	b = slices.Grow(b, n)
	b = append(b, '[')
	for i, t := range k.tabs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, t...)
	}
	return append(b, ']')
}

// keepTabs is listTabs's filter over the provider's list raw, as decodeTabs
// reads it, giving the kept tabs' JSON. A tab whose text is already what
// json.Marshal writes for it (the four members in order, plain strings,
// no white space: what a provider sends as a rule) is kept as that text,
// a subslice of raw; any other is decoded and written anew. The kept tabs'
// strings are neither copied nor built (a browser.tabs round trip's
// largest allocations), and the list is not encoded again.
func (r *Runtime) keepTabs(raw json.RawMessage, instanceID string) (*keptTabs, error) {
	if string(bytes.Trim(raw, " \t\r\n")) == "null" { // JSON's whitespace
		return &keptTabs{null: true}, nil
	}
	kept := &keptTabs{tabs: make([][]byte, 0, 8)}
	var got [4][]byte // the element's id, instanceId, url, title; nil when absent or null
	member := func(key, value []byte) error { return setTabMember(&got, key, value) }
	err := wire.ObjectElements(raw, member, func(elem []byte) error {
		values := got
		clear(got[:]) // the next element starts with none
		var tab [4]string
		for i, v := range values {
			if v == nil {
				continue
			}
			var err error
			if inner := v[1 : len(v)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
				// Its text is its value. The view is only read here, and
				// raw (a frame's payload, this call's own) is never written.
				tab[i] = unsafe.String(unsafe.SliceData(inner), len(inner))
			} else if tab[i], err = wire.String(v); err != nil {
				return errNotAString
			}
		}
		if tab[1] != instanceID || !bounded(tab[0], 1, 256) || !r.allowedURL(tab[2]) {
			return nil
		}
		if canonicalTab(elem, &values) {
			kept.tabs = append(kept.tabs, elem)
		} else {
			t := browser.TabSummary{ID: tab[0], InstanceID: tab[1], URL: tab[2], Title: tab[3]}
			kept.tabs = append(kept.tabs, appendTab(nil, &t)) // copies the strings out of raw
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return kept, nil
}

// setTabMember records the raw value of a TabSummary member in values at
// its index (tabMember), nil for null; any other member is skipped. The
// last one of a name counts, as in json.Unmarshal.
func setTabMember(values *[4][]byte, key, value []byte) error {
	i := tabMember(key)
	if i < 0 {
		return nil
	}
	values[i] = nil
	if string(value) != "null" {
		if value[0] != '"' {
			return errNotAString
		}
		values[i] = value
	}
	return nil
}

// tabMember returns the index of a TabSummary member named key (matched
// exactly), or -1.
func tabMember(key []byte) int {
	switch string(key) {
	case "id":
		return 0
	case "instanceId":
		return 1
	case "url":
		return 2
	case "title":
		return 3
	}
	return -1
}

// canonicalTab reports whether elem, with the member values read from it,
// is byte for byte what appendTab writes for the tab they decode to.
func canonicalTab(elem []byte, values *[4][]byte) bool {
	rest := elem
	for i, key := range [4]string{`{"id":`, `,"instanceId":`, `,"url":`, `,"title":`} {
		v := values[i]
		if len(rest) < len(key)+len(v) || string(rest[:len(key)]) != key || !plainString(v) {
			return false
		}
		if rest = rest[len(key):]; string(rest[:len(v)]) != string(v) {
			return false
		}
		rest = rest[len(v):]
	}
	return string(rest) == "}"
}

// plainString reports whether raw is a JSON string that wire.AppendString
// writes as it is: printable ASCII with nothing it escapes.
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// errNotPlain stops decodeTabsParams's quick pass at what it leaves to
// decodeParams.
var errNotPlain = errors.New("not a plain browser.tabs params object")

// decodeTabsParams is decodeParams into browser.TabsParams. The params
// every client sends, one object of the two members as strings, are
// decoded in one pass of wire's scanner (a json.Decoder was a tenth of
// the broker's own time in a browser.tabs round trip); anything else —
// another key, whatever its case, a value that is not a string, text that
// is not one object — goes to decodeParams, which decides.
func decodeTabsParams(params json.RawMessage) (browser.TabsParams, error) {
	var in browser.TabsParams
	err := wire.Members(params, func(key, value []byte) error {
		var dst *string
		switch string(key) {
		case "sessionId":
			dst = &in.SessionID
		case "instanceId":
			dst = &in.InstanceID
		default:
			return errNotPlain
		}
		s, err := wire.String(value)
		if err != nil {
			return errNotPlain
		}
		*dst = s // the last one counts, as in encoding/json
		return nil
	})
	if err != nil {
		var slow browser.TabsParams // its own: in stays on the stack
		err := decodeParams(params, &slow)
		return slow, err
	}
	return in, nil
}

func (r *Runtime) listTabs(ctx context.Context, instanceID string) ([]browser.TabSummary, error) {
	prov, err := r.provider(instanceID)
	if err != nil {
		return nil, err
	}
	listed, err := callTabsList(ctx, prov)
	if err != nil {
		return nil, err
	}
	out := listed[:0] // filtered in place: the list is this call's own
	for _, tab := range listed {
		if tab.InstanceID != instanceID || !bounded(tab.ID, 1, 256) {
			continue
		}
		if !r.allowedURL(tab.URL) {
			continue
		}
		out = append(out, tab)
	}
	return out, nil
}

// errNotAString is a tab list member that should be a string and is not.
var errNotAString = errors.New("a tab's id, instanceId, url or title is not a string")

// decodeTabs decodes a provider's tab list as json.Unmarshal would into
// []browser.TabSummary (null as no tabs; a member missing or null as its
// zero value; other members ignored), except that the keys match exactly,
// not whatever their case. It is one pass of wire's scanner, without
// reflection, and its strings share one allocation: decoding the list was
// most of the broker's own time in a browser.tabs round trip, and a string
// apiece a fifth of its allocations.
func decodeTabs(raw json.RawMessage) ([]browser.TabSummary, error) {
	if string(bytes.Trim(raw, " \t\r\n")) == "null" { // JSON's whitespace
		return nil, nil
	}
	// Each field's text is appended to text, and its end offset kept in
	// ends, four a tab; the strings are cut from text's one string after.
	var text strings.Builder
	text.Grow(len(raw)) // room enough unless invalid UTF-8 grows into U+FFFD
	ends := make([]int, 0, 32)
	err := wire.Elements(raw, func(elem []byte) error {
		var values [4][]byte // id, instanceId, url, title; nil when absent or null
		err := wire.Members(elem, func(key, value []byte) error { return setTabMember(&values, key, value) })
		for _, v := range values {
			if v != nil {
				// v is a string Elements checked: without escapes, and in
				// valid UTF-8, its text is its value.
				if inner := v[1 : len(v)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
					text.Write(inner)
				} else if s, perr := wire.String(v); perr == nil {
					text.WriteString(s)
				} else if err == nil {
					err = errNotAString
				}
			}
			ends = append(ends, text.Len())
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	all := text.String()
	tabs := make([]browser.TabSummary, len(ends)/4)
	start := 0
	field := func(i int) string {
		s := all[start:ends[i]]
		start = ends[i]
		return s
	}
	for i := range tabs {
		tabs[i] = browser.TabSummary{ID: field(4 * i), InstanceID: field(4*i + 1), URL: field(4*i + 2), Title: field(4*i + 3)}
	}
	return tabs, nil
}

// appendTab appends json.Marshal's encoding of t.
func appendTab(b []byte, t *browser.TabSummary) []byte {
	b = append(b, `{"id":`...)
	b = wire.AppendString(b, t.ID)
	b = append(b, `,"instanceId":`...)
	b = wire.AppendString(b, t.InstanceID)
	b = append(b, `,"url":`...)
	b = wire.AppendString(b, t.URL)
	b = append(b, `,"title":`...)
	b = wire.AppendString(b, t.Title)
	return append(b, '}')
}
