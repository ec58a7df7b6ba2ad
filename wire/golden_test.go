package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

// Message kinds, as named in protocol/testdata/vectors.json.
const (
	kindEnvelope = "envelope"
	kindHello    = "hello"
	kindWelcome  = "welcome"
)

// golden is one hand-written test message with its expected verdict.
type golden struct {
	name  string
	kind  string
	json  string
	valid bool
	// goOnly keeps the case out of vectors.json, which a JavaScript
	// validator reads: the text is not JSON at all, or not UTF-8, or holds a
	// number that JSON.parse rounds to a different value.
	goOnly bool
	// rule is the rule past the schema (browser.Rule*) that alone refuses
	// a params case the schema accepts.
	rule string
}

// kvs is a JSON object under construction: ordered members with raw values.
type kvs []kv

type kv struct{ k, v string }

// set returns a copy of o with member k set to the raw JSON v, in place if
// present and appended otherwise.
func (o kvs) set(k, v string) kvs {
	out := append(kvs(nil), o...)
	for i := range out {
		if out[i].k == k {
			out[i].v = v
			return out
		}
	}
	return append(out, kv{k, v})
}

// del returns a copy of o without member k.
func (o kvs) del(k string) kvs {
	var out kvs
	for _, m := range o {
		if m.k != k {
			out = append(out, m)
		}
	}
	return out
}

func (o kvs) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jstr(m.k))
		b.WriteByte(':')
		b.WriteString(m.v)
	}
	b.WriteByte('}')
	return b.String()
}

// jstr returns s as a JSON string literal, without HTML escaping.
func jstr(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// jlist returns the JSON array of the given strings.
func jlist(items ...string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = jstr(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// nameOf returns a valid name of exactly n ASCII characters.
func nameOf(n int) string { return "a" + strings.Repeat("b", n-1) }

// capsOf returns n distinct valid capability names.
func capsOf(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("cap.n%02d.v1", i)
	}
	return out
}

// intList returns the JSON array 1..n.
func intList(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint(i + 1)
	}
	return "[" + strings.Join(s, ",") + "]"
}

var (
	// The payloads shown in the spec, verbatim.
	specClientHello = `{
  "bootstrap":1,"versions":[1],"role":"client","token":"<private IPC token>",
  "journalKey":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "requiredCapabilities":["runtime.v1","runtime.personal-tab-scope.v1","observe.query.v1","journal.recovery.v1","runtime.check.v1","runtime.wheel.v1","runtime.radio.v1","runtime.capture-publication.v1","runtime.contenteditable-fill.v1","runtime.append.v1","runtime.element-state.v1","runtime.batch.v1","runtime.page.v1","runtime.frames.v1","observe.frame.v1","runtime.frame-click.v1","observe.frame-query.v1","observe.frame-subtree.v1","observe.frame-page.v1"]
}`
	specProviderHello = `{
  "bootstrap":1,"versions":[1],"role":"provider",
  "capabilities":["lease.fencing.v1","lease.tab-scope.v1","ax.read.v1","ax.find.v1","input.named-keys.v1","scroll.dom.v1","ax.checked-state.v1","input.wheel.v1","input.radio.v1","ax.editable-state.v1","ax.page.v1","frame.sessions.v1","ax.frame.v1","input.frame-click.v1","ax.frame-find.v1","ax.frame-subtree.v1","ax.frame-page.v1","ax.frame-text.v1"],
  "requiredCapabilities":["runtime.v1","provider.ax-read.v1","provider.ax-find.v1"],
  "instance":{"id":"opaque-instance","family":"chromium","brand":"chrome","version":"browser user agent","profileLabel":"User-authorized profile"}
}`
	specWelcome = `{
  "version":1,"connectionEpoch":"opaque-new-connection",
  "capabilities":["runtime.v1","runtime.personal-tab-scope.v1","observe.query.v1","journal.recovery.v1","provider.ax-read.v1","provider.ax-find.v1","runtime.check.v1","runtime.wheel.v1","runtime.radio.v1","runtime.capture-publication.v1","runtime.contenteditable-fill.v1","runtime.append.v1","runtime.element-state.v1","runtime.batch.v1","runtime.page.v1","runtime.frames.v1","observe.frame.v1","runtime.frame-click.v1","observe.frame-query.v1","observe.frame-subtree.v1","observe.frame-page.v1"]
}`

	// The five envelope shapes shown in the spec.
	specRequest  = kvs{{"type", `"request"`}, {"id", `"r1"`}, {"method", `"browser.instances"`}, {"params", `{}`}}
	specSuccess  = kvs{{"type", `"response"`}, {"id", `"r1"`}, {"ok", `true`}, {"value", `[]`}}
	specFailure  = kvs{{"type", `"response"`}, {"id", `"r2"`}, {"ok", `false`}, {"code", `"STALE_TARGET"`}}
	specEvent    = kvs{{"type", `"event"`}, {"event", `"page.changed"`}, {"value", `{"tab":"instance:7","leaseId":"lease","sequence":1}`}}
	specCancel   = kvs{{"type", `"cancel"`}, {"id", `"r2"`}}
	specEnvelope = []struct {
		name string
		obj  kvs
	}{
		{"request", specRequest},
		{"success", specSuccess},
		{"failure", specFailure},
		{"event", specEvent},
		{"cancel", specCancel},
	}

	instance = kvs{{"id", `"opaque-instance"`}, {"family", `"chromium"`}, {"brand", `"chrome"`},
		{"version", `"browser user agent"`}, {"profileLabel", `"User-authorized profile"`}}
	clientHello = kvs{{"bootstrap", `1`}, {"versions", `[1]`}, {"role", `"client"`}, {"token", `"tok"`},
		{"journalKey", jstr(strings.Repeat("0123456789abcdef", 4))},
		{"requiredCapabilities", jlist("runtime.v1", "observe.query.v1")}}
	providerHello = kvs{{"bootstrap", `1`}, {"versions", `[1]`}, {"role", `"provider"`},
		{"capabilities", jlist("lease.fencing.v1", "ax.read.v1")},
		{"requiredCapabilities", jlist("runtime.v1")}, {"instance", instance.String()}}
	welcome = kvs{{"version", `1`}, {"connectionEpoch", `"epoch-1"`}, {"capabilities", jlist("runtime.v1")}}
)

// Strings of exact lengths in code points, with 1-, 2-, 3- and 4-byte
// characters (the last is a surrogate pair in JavaScript).
var runeSets = []struct{ name, r string }{
	{"ascii", "x"}, {"2-byte", "é"}, {"3-byte", "中"}, {"4-byte", "😀"},
}

var (
	badFirst = []string{"1abc", "_abc", ".abc", "-abc", ":abc", " abc", "Äbc"}
	badChars = []string{"a b", "a/b", "a$b", "a+b", "a,b", "a;b", "a@b", "a#b", "a*b", "aé",
		"a\u0000b", "a\tb", "abc\n", "\nabc", "ａbc", "a\u200bb", "abc ", "ab\\c", "a\"b"}
	goodNames = []string{"a", "Z", "A0_.:-z", "browser.instances", "x:y-z_w.v", "a-", "a.", "a:", "toString", "constructor"}
)

func goldenEnvelopes() []golden {
	var out []golden
	add := func(name, json string, valid bool) {
		out = append(out, golden{name: name, kind: kindEnvelope, json: json, valid: valid})
	}
	for _, s := range specEnvelope {
		add("spec "+s.name, s.obj.String(), true)
		for _, m := range s.obj {
			add(s.name+" without "+m.k, s.obj.del(m.k).String(), false)
		}
		for _, extra := range []string{"extra", "kind", "protocol", "session", "epoch", "result", "error",
			"__proto__", "constructor", "toString", "Type", "ID", "id ", ""} {
			if extra == "id" {
				continue
			}
			add(s.name+" with extra key "+jstr(extra), s.obj.set(extra, `1`).String(), false)
		}
		for _, other := range []string{"id", "method", "params", "ok", "value", "code", "event"} {
			if _, has := lookup(s.obj, other); !has {
				add(s.name+" with "+other+" from another shape", s.obj.set(other, sampleFor(other)).String(), false)
			}
		}
		for _, typ := range []string{`"REQUEST"`, `"Request"`, `"hello"`, `""`, `"cancel "`, `"toString"`, `null`, `1`, `true`, `[]`, `{}`, `["request"]`} {
			add(s.name+" with type "+typ, s.obj.set("type", typ).String(), false)
		}
	}

	// IDs: 1 to 128 code points, counted as code points.
	for _, se := range specEnvelope {
		s, typ := se.obj, se.name
		if _, has := lookup(s, "id"); !has {
			continue
		}
		for _, rs := range runeSets {
			add(typ+" id of 128 "+rs.name, s.set("id", jstr(strings.Repeat(rs.r, 128))).String(), true)
			add(typ+" id of 129 "+rs.name, s.set("id", jstr(strings.Repeat(rs.r, 129))).String(), false)
		}
		add(typ+" id of 128 escaped surrogate pairs", s.set("id", `"`+strings.Repeat(`\ud83d\ude00`, 128)+`"`).String(), true)
		add(typ+" id of 129 escaped surrogate pairs", s.set("id", `"`+strings.Repeat(`\ud83d\ude00`, 129)+`"`).String(), false)
		add(typ+" id of 127 ascii and one emoji", s.set("id", jstr(strings.Repeat("x", 127)+"😀")).String(), true)
		add(typ+" id of 128 escaped ascii", s.set("id", `"`+strings.Repeat(`\u0041`, 128)+`"`).String(), true)
		for _, id := range []string{`" "`, `"\u0000"`, `"1"`, `"toString"`, `"r1\n"`} {
			add(typ+" id "+id, s.set("id", id).String(), true)
		}
		for _, id := range []string{`""`, `null`, `1`, `0`, `true`, `[]`, `["r1"]`, `{}`} {
			add(typ+" id "+id, s.set("id", id).String(), false)
		}
	}

	// Method and event names.
	for _, s := range []struct {
		field string
		obj   kvs
	}{{"method", specRequest}, {"event", specEvent}} {
		add(s.field+" of 128 characters", s.obj.set(s.field, jstr(nameOf(128))).String(), true)
		add(s.field+" of 129 characters", s.obj.set(s.field, jstr(nameOf(129))).String(), false)
		for _, n := range goodNames {
			add(s.field+" "+jstr(n), s.obj.set(s.field, jstr(n)).String(), true)
		}
		for _, n := range append(append([]string{""}, badFirst...), badChars...) {
			add(s.field+" "+jstr(n), s.obj.set(s.field, jstr(n)).String(), false)
		}
		for _, v := range []string{`null`, `1`, `true`, `[]`, `{}`, `["a"]`} {
			add(s.field+" "+v, s.obj.set(s.field, v).String(), false)
		}
	}

	// params must be an object; value may be anything.
	for _, p := range []string{`{"a":{"b":[1,null]}}`, `{"":0}`, `{"__proto__":1}`, `{ }`} {
		add("params "+p, specRequest.set("params", p).String(), true)
	}
	for _, p := range []string{`null`, `[]`, `[{}]`, `"{}"`, `1`, `true`, `false`} {
		add("params "+p, specRequest.set("params", p).String(), false)
	}
	for _, v := range []string{`null`, `true`, `false`, `0`, `-1.5e10`, `""`, `"x"`, `[]`, `{}`, `[[[]]]`, `{"a":[{"b":null}]}`} {
		add("success value "+v, specSuccess.set("value", v).String(), true)
		add("event value "+v, specEvent.set("value", v).String(), true)
	}

	// ok is the boolean true or false.
	for _, ok := range []string{`"true"`, `"false"`, `1`, `0`, `null`, `[]`, `{}`} {
		add("success ok "+ok, specSuccess.set("ok", ok).String(), false)
		add("failure ok "+ok, specFailure.set("ok", ok).String(), false)
	}
	add("ok true with code", specSuccess.del("value").set("code", `"STALE_TARGET"`).String(), false)
	add("ok false with value", specFailure.del("code").set("value", `null`).String(), false)
	add("failure with code and value", specFailure.set("value", `null`).String(), false)
	add("success with value and code", specSuccess.set("code", `"STALE_TARGET"`).String(), false)
	add("response without ok, value or code", specCancel.set("type", `"response"`).String(), false)

	// code is a registry code.
	for _, c := range wire.Codes {
		add("code "+string(c), specFailure.set("code", jstr(string(c))).String(), true)
	}
	for _, c := range []string{`"stale_target"`, `"Stale_Target"`, `"NOT_A_CODE"`, `""`, `" STALE_TARGET"`, `"STALE_TARGET "`,
		`"constructor"`, `"toString"`, `"__proto__"`, `null`, `1`, `true`, `[]`, `["STALE_TARGET"]`, `{}`} {
		add("code "+c, specFailure.set("code", c).String(), false)
	}

	// Not an object.
	for _, v := range []string{`[]`, `null`, `"request"`, `1`, `true`, `[{"type":"cancel","id":"r1"}]`} {
		add("top level "+v, v, false)
	}

	// JSON text details: whitespace, escaped keys, repeated keys (the last
	// one wins, as in JSON.parse).
	add("JSON whitespace around and inside", " \r\n\t{ \"type\" : \"cancel\" ,\n\"id\":\"r1\" }\n ", true)
	add("escaped key", `{"typ\u0065":"cancel","\u0069d":"r1"}`, true)
	add("repeated key, last wins valid", `{"type":"request","type":"cancel","id":"r1"}`, true)
	add("repeated key, last wins invalid", `{"type":"cancel","id":"r1","id":""}`, false)
	add("repeated key, last wins extra", `{"type":"cancel","id":"r1","type":"event"}`, false)
	return out
}

// lookup returns the raw value of member k.
func lookup(o kvs, k string) (string, bool) {
	for _, m := range o {
		if m.k == k {
			return m.v, true
		}
	}
	return "", false
}

// sampleFor returns a valid value for an envelope field.
func sampleFor(field string) string {
	switch field {
	case "id":
		return `"r9"`
	case "method", "event":
		return `"page.changed"`
	case "params":
		return `{}`
	case "ok":
		return `true`
	case "code":
		return `"STALE_TARGET"`
	}
	return `null`
}

func goldenHellos() []golden {
	var out []golden
	add := func(name, json string, valid bool) {
		out = append(out, golden{name: name, kind: kindHello, json: json, valid: valid})
	}
	goOnly := func(name, json string, valid bool) {
		out = append(out, golden{name: name, kind: kindHello, json: json, valid: valid, goOnly: true})
	}
	add("spec client hello", specClientHello, true)
	add("spec provider hello", specProviderHello, true)
	add("client hello", clientHello.String(), true)
	add("provider hello", providerHello.String(), true)
	add("provider hello with token", providerHello.set("token", `"tok"`).String(), true)
	add("legacy client hello", clientHello.del("journalKey").del("requiredCapabilities").String(), true)
	add("client hello without token", clientHello.del("token").String(), true)
	add("provider hello without requirements", providerHello.del("requiredCapabilities").String(), true)

	roles := []struct {
		name string
		obj  kvs
	}{{"client", clientHello}, {"provider", providerHello}}
	for _, r := range roles {
		h := r.obj
		for _, req := range []string{"bootstrap", "versions", "role"} {
			add(r.name+" without "+req, h.del(req).String(), false)
		}
		for _, extra := range []string{"extra", "protocol", "version", "Role", "__proto__", "constructor"} {
			add(r.name+" with extra key "+extra, h.set(extra, `1`).String(), false)
		}

		// bootstrap is fixed at 1.
		for _, b := range []string{`1.0`, `1e0`, `10e-1`} {
			add(r.name+" bootstrap "+b, h.set("bootstrap", b).String(), true)
		}
		for _, b := range []string{`2`, `0`, `-1`, `1.5`, `"1"`, `true`, `null`, `[1]`, `{}`} {
			add(r.name+" bootstrap "+b, h.set("bootstrap", b).String(), false)
		}

		// versions: 1 to 8 unique integers in 1..65535.
		for _, v := range []string{intList(8), `[2]`, `[65535]`, `[1,65535]`, `[1.0]`, `[1e0]`, `[100e-2]`, `[3,2,1]`, `[6.5535e4]`} {
			add(r.name+" versions "+v, h.set("versions", v).String(), true)
		}
		for _, v := range []string{intList(9), `[]`, `[1,1]`, `[1,2,1]`, `[1,1.0]`, `[1,1e0]`, `[0]`, `[1,0]`, `[-1]`,
			`[65536]`, `[1,65536]`, `[1.5]`, `[1e5]`, `["1"]`, `[null]`, `[true]`, `[[1]]`, `[{}]`, `1`, `"1"`, `null`, `{}`} {
			add(r.name+" versions "+v, h.set("versions", v).String(), false)
		}

		// requiredCapabilities: at most 64 unique names.
		capLists(r.name, h, "requiredCapabilities", add)

		// token: 1 to 256 code points.
		for _, rs := range runeSets {
			add(r.name+" token of 256 "+rs.name, h.set("token", jstr(strings.Repeat(rs.r, 256))).String(), true)
			add(r.name+" token of 257 "+rs.name, h.set("token", jstr(strings.Repeat(rs.r, 257))).String(), false)
		}
		for _, tok := range []string{`""`, `null`, `1`, `true`, `[]`, `{}`} {
			add(r.name+" token "+tok, h.set("token", tok).String(), false)
		}

		// role-specific keys.
		add(r.name+" role CLIENT", h.set("role", `"CLIENT"`).String(), false)
		for _, role := range []string{`"Provider"`, `"broker"`, `""`, `"constructor"`, `null`, `1`, `["client"]`} {
			add(r.name+" role "+role, h.set("role", role).String(), false)
		}
	}

	// Keys of one role are rejected on the other.
	// A client may advertise capabilities (transport.ordered-ids.v1); the
	// list has the same grammar as a provider's.
	add("client with capabilities", clientHello.set("capabilities", `["transport.ordered-ids.v1"]`).String(), true)
	add("client with empty capabilities", clientHello.set("capabilities", `[]`).String(), true)
	add("client with a repeated capability", clientHello.set("capabilities", `["a.v1","a.v1"]`).String(), false)
	add("client with a non-string capability", clientHello.set("capabilities", `[1]`).String(), false)
	add("client with instance", clientHello.set("instance", instance.String()).String(), false)
	add("provider with journalKey", providerHello.set("journalKey", jstr(strings.Repeat("a", 64))).String(), false)
	add("client hello with role provider", clientHello.set("role", `"provider"`).String(), false)
	add("provider hello with role client", providerHello.set("role", `"client"`).String(), false)
	add("provider without capabilities", providerHello.del("capabilities").String(), false)
	add("provider without instance", providerHello.del("instance").String(), false)
	capLists("provider", providerHello, "capabilities", add)

	// journalKey: exactly 64 lowercase hexadecimal digits.
	for _, k := range []string{strings.Repeat("a", 64), strings.Repeat("0", 64), strings.Repeat("f0", 32)} {
		add("journalKey "+k[:8]+"…", clientHello.set("journalKey", jstr(k)).String(), true)
	}
	for _, k := range []string{strings.Repeat("a", 63), strings.Repeat("a", 65), strings.Repeat("A", 64),
		strings.Repeat("a", 63) + "A", strings.Repeat("a", 63) + "g", strings.Repeat("a", 64) + "\n",
		"\n" + strings.Repeat("a", 64), strings.Repeat("a", 63) + " ", strings.Repeat("é", 64), ""} {
		add("journalKey "+jstr(k), clientHello.set("journalKey", jstr(k)).String(), false)
	}
	for _, k := range []string{`null`, `1`, `true`, `[]`, `{}`} {
		add("journalKey "+k, clientHello.set("journalKey", k).String(), false)
	}

	// instance: five strings, family a lowercase word, nothing else.
	for _, m := range instance {
		add("instance without "+m.k, providerHello.set("instance", instance.del(m.k).String()).String(), false)
		if m.k != "family" {
			add("instance "+m.k+" empty", providerHello.set("instance", instance.set(m.k, `""`).String()).String(), false)
			add("instance "+m.k+" number", providerHello.set("instance", instance.set(m.k, `7`).String()).String(), false)
			add("instance "+m.k+" null", providerHello.set("instance", instance.set(m.k, `null`).String()).String(), false)
		}
	}
	for _, f := range []string{`"Chromium"`, `"chromium "`, `""`, `null`, `1`, `["chromium"]`, `"1chromium"`, `"chr_mium"`, jstr(strings.Repeat("a", 33))} {
		add("instance family "+f, providerHello.set("instance", instance.set("family", f).String()).String(), false)
	}
	for _, f := range []string{`"chrome"`, `"terminal"`, `"a"`, jstr(strings.Repeat("a", 32)), `"snug-host"`} {
		add("instance family "+f, providerHello.set("instance", instance.set("family", f).String()).String(), true)
	}
	// kind: optional on a provider, a lowercase word; never on a client.
	for _, k := range []string{`"browser"`, `"snug"`, `"terminal"`, `"x1-y"`, jstr(strings.Repeat("k", 32))} {
		add("provider kind "+k, providerHello.set("kind", k).String(), true)
	}
	for _, k := range []string{`""`, `"Browser"`, `"a b"`, `"-x"`, `1`, `null`, `["browser"]`, jstr(strings.Repeat("k", 33))} {
		add("provider kind "+k, providerHello.set("kind", k).String(), false)
	}
	add("client with a kind", clientHello.set("kind", `"browser"`).String(), false)
	limits := []struct {
		field string
		max   int
	}{{"id", 128}, {"brand", 256}, {"version", 256}, {"profileLabel", 256}}
	for _, l := range limits {
		for _, rs := range runeSets[1:4:4] {
			add(fmt.Sprintf("instance %s of %d %s", l.field, l.max, rs.name),
				providerHello.set("instance", instance.set(l.field, jstr(strings.Repeat(rs.r, l.max))).String()).String(), true)
			add(fmt.Sprintf("instance %s of %d %s", l.field, l.max+1, rs.name),
				providerHello.set("instance", instance.set(l.field, jstr(strings.Repeat(rs.r, l.max+1))).String()).String(), false)
		}
	}
	add("instance extra key", providerHello.set("instance", instance.set("pid", `1`).String()).String(), false)
	for _, in := range []string{`null`, `[]`, `"opaque-instance"`, `{}`} {
		add("instance "+in, providerHello.set("instance", in).String(), false)
	}

	// Not an object, or an envelope where a payload belongs.
	for _, v := range []string{`[]`, `null`, `1`, `"client"`, specRequest.String()} {
		add("hello top level "+v, v, false)
	}

	// Integers are exact: a number JSON.parse would round to 1 is not 1.
	for _, v := range []string{`1.0000000000000001`, `0.99999999999999999`, `1.00000000000000000000000000001`} {
		goOnly("versions ["+v+"]", clientHello.set("versions", "["+v+"]").String(), false)
		goOnly("bootstrap "+v, clientHello.set("bootstrap", v).String(), false)
	}
	goOnly("versions [65535.00000000000001]", clientHello.set("versions", `[65535.00000000000001]`).String(), false)
	goOnly("versions [65535.999999999999999]", clientHello.set("versions", `[65535.999999999999999]`).String(), false)
	goOnly("versions [1, 1.0000000000000001]", clientHello.set("versions", `[1,1.0000000000000001]`).String(), false)
	goOnly("versions [1e400]", clientHello.set("versions", `[1e400]`).String(), false)
	goOnly("versions [1e-400]", clientHello.set("versions", `[1e-400]`).String(), false)
	goOnly("versions [1e1000001]", clientHello.set("versions", `[1e1000001]`).String(), false)
	goOnly("versions [1000000e-6]", clientHello.set("versions", `[1000000e-6]`).String(), true)
	goOnly("versions [0.00001e5]", clientHello.set("versions", `[0.00001e5]`).String(), true)
	goOnly("versions [-0]", clientHello.set("versions", `[-0]`).String(), false)
	goOnly("versions [99999999999999999999]", clientHello.set("versions", `[99999999999999999999]`).String(), false)
	goOnly("versions [18446744073709551617]", clientHello.set("versions", `[18446744073709551617]`).String(), false)
	goOnly("versions [9223372036854775808e-18]", clientHello.set("versions", `[9223372036854775808e-18]`).String(), false)
	goOnly("bootstrap 1e99999999999999999999", clientHello.set("bootstrap", `1e99999999999999999999`).String(), false)
	goOnly("bootstrap 1e-99999999999999999999", clientHello.set("bootstrap", `1e-99999999999999999999`).String(), false)
	return out
}

// capLists adds the cases for a list of at most 64 unique names.
func capLists(role string, h kvs, field string, add func(string, string, bool)) {
	pre := role + " " + field + " "
	add(pre+"empty", h.set(field, `[]`).String(), true)
	add(pre+"of 64", h.set(field, jlist(capsOf(64)...)).String(), true)
	add(pre+"of 65", h.set(field, jlist(capsOf(65)...)).String(), false)
	add(pre+"of 64 with a duplicate", h.set(field, jlist(append(capsOf(63), "cap.n00.v1")...)).String(), false)
	add(pre+"duplicate", h.set(field, jlist("runtime.v1", "runtime.v1")).String(), false)
	add(pre+"name of 128", h.set(field, jlist(nameOf(128))).String(), true)
	add(pre+"name of 129", h.set(field, jlist(nameOf(129))).String(), false)
	add(pre+"object prototype names", h.set(field, jlist("toString", "constructor", "hasOwnProperty", "valueOf")).String(), true)
	add(pre+"names differing in case", h.set(field, jlist("runtime.v1", "Runtime.v1")).String(), true)
	for _, n := range append(append([]string{"", "__proto__"}, badFirst...), badChars...) {
		add(pre+"with "+jstr(n), h.set(field, jlist("runtime.v1", n)).String(), false)
	}
	for _, v := range []string{`null`, `"runtime.v1"`, `{}`, `1`, `[null]`, `[1]`, `[["runtime.v1"]]`, `[{}]`} {
		add(pre+v, h.set(field, v).String(), false)
	}
}

func goldenWelcomes() []golden {
	var out []golden
	add := func(name, json string, valid bool) {
		out = append(out, golden{name: name, kind: kindWelcome, json: json, valid: valid})
	}
	add("spec welcome", specWelcome, true)
	add("welcome", welcome.String(), true)
	for _, m := range welcome {
		add("welcome without "+m.k, welcome.del(m.k).String(), false)
	}
	for _, extra := range []string{"token", "role", "versions", "instance", "extra", "__proto__"} {
		add("welcome with "+extra, welcome.set(extra, `1`).String(), false)
	}
	for _, v := range []string{`1`, `2`, `65535`, `1.0`, `1e0`, `1E+0`, `0.1e1`, `6553.5e1`, `655350e-1`, `1.10e1`, `65535.000`} {
		add("welcome version "+v, welcome.set("version", v).String(), true)
	}
	for _, v := range []string{`0`, `-1`, `65536`, `1.5`, `-1e0`, `1.5e0`, `0e5`, `65535.5e0`, `6.55351e4`, `-0.0`,
		`"1"`, `true`, `null`, `[1]`, `{}`} {
		add("welcome version "+v, welcome.set("version", v).String(), false)
	}
	for _, rs := range runeSets {
		add("connectionEpoch of 128 "+rs.name, welcome.set("connectionEpoch", jstr(strings.Repeat(rs.r, 128))).String(), true)
		add("connectionEpoch of 129 "+rs.name, welcome.set("connectionEpoch", jstr(strings.Repeat(rs.r, 129))).String(), false)
	}
	for _, e := range []string{`""`, `null`, `1`, `[]`, `{}`} {
		add("connectionEpoch "+e, welcome.set("connectionEpoch", e).String(), false)
	}
	capLists("welcome", welcome, "capabilities", add)
	add("welcome top level array", `[]`, false)
	out = append(out,
		golden{name: "welcome version 1.0000000000000001", kind: kindWelcome, json: welcome.set("version", `1.0000000000000001`).String(), goOnly: true},
		golden{name: "welcome version 65535.0000000000001", kind: kindWelcome, json: welcome.set("version", `65535.0000000000001`).String(), goOnly: true},
		golden{name: "welcome version 1e1000000", kind: kindWelcome, json: welcome.set("version", `1e1000000`).String(), goOnly: true},
	)
	return out
}

// goldenNotJSON are inputs that are not one JSON object in UTF-8: each
// parser must reject them (or, for the replacement-character cases, accept
// them exactly as encoding/json decodes them).
func goldenNotJSON() []golden {
	var out []golden
	texts := []struct {
		name, text string
		valid      bool
	}{
		{"empty", "", false},
		{"whitespace", " \n", false},
		{"unterminated", `{"type":"cancel","id":"r1"`, false},
		{"trailing garbage", `{"type":"cancel","id":"r1"} x`, false},
		{"two objects", `{"type":"cancel","id":"r1"}{"type":"cancel","id":"r1"}`, false},
		{"non-breaking space before", "\u00a0{\"type\":\"cancel\",\"id\":\"r1\"}", false},
		{"next line before", "\u0085{\"type\":\"cancel\",\"id\":\"r1\"}", false},
		{"ideographic space after", "{\"type\":\"cancel\",\"id\":\"r1\"}\u3000", false},
		{"byte order mark", "\ufeff{\"type\":\"cancel\",\"id\":\"r1\"}", false},
		{"vertical tab before", "\v{\"type\":\"cancel\",\"id\":\"r1\"}", false},
		{"single quotes", `{'type':'cancel','id':'r1'}`, false},
		{"trailing comma", `{"type":"cancel","id":"r1",}`, false},
		{"comment", `{"type":"cancel",/*x*/"id":"r1"}`, false},
		{"invalid UTF-8 in id decodes as U+FFFD", "{\"type\":\"cancel\",\"id\":\"\xff\"}", true},
		{"128 invalid bytes in id", "{\"type\":\"cancel\",\"id\":\"" + strings.Repeat("\xff", 128) + "\"}", true},
		{"129 invalid bytes in id", "{\"type\":\"cancel\",\"id\":\"" + strings.Repeat("\xff", 129) + "\"}", false},
		{"invalid UTF-8 in method", "{\"type\":\"request\",\"id\":\"r1\",\"method\":\"a\xffb\",\"params\":{}}", false},
	}
	for _, tc := range texts {
		out = append(out, golden{name: tc.name, kind: kindEnvelope, json: tc.text, valid: tc.valid, goOnly: true})
	}
	for _, tc := range texts[:13] {
		out = append(out, golden{name: "hello " + tc.name, kind: kindHello, json: strings.Replace(tc.text, `{"type":"cancel","id":"r1"}`, clientHello.String(), 1), goOnly: true})
		out = append(out, golden{name: "welcome " + tc.name, kind: kindWelcome, json: strings.Replace(tc.text, `{"type":"cancel","id":"r1"}`, welcome.String(), 1), goOnly: true})
	}
	return out
}

func allGoldens() []golden {
	var out []golden
	out = append(out, goldenEnvelopes()...)
	out = append(out, goldenHellos()...)
	out = append(out, goldenWelcomes()...)
	out = append(out, goldenNotJSON()...)
	out = append(out, goldenParams()...)
	return out
}

// parse runs the Go validator for kind and returns its error.
func parse(kind string, data []byte) error {
	var err error
	switch kind {
	case kindEnvelope:
		_, err = wire.ParseEnvelope(data)
	case kindHello:
		_, err = wire.ParseHello(data)
	case kindWelcome:
		_, err = wire.ParseWelcome(data)
	case kindAct:
		_, err = browser.ParseAct(data)
	case kindBatch:
		_, err = browser.ParseBatch(data)
	case kindObserve:
		_, err = browser.ParseObserve(data)
	default:
		panic("unknown kind " + kind)
	}
	return err
}

func TestGolden(t *testing.T) {
	for _, g := range allGoldens() {
		t.Run(g.kind+"/"+g.name, func(t *testing.T) {
			err := parse(g.kind, []byte(g.json))
			if (err == nil) != g.valid {
				t.Errorf("valid = %v, want %v (err: %v)\n%s", err == nil, g.valid, err, g.json)
			}
			if params(g.kind) {
				if _, ok := errors.AsType[*browser.ParamsError](err); err != nil && !ok {
					t.Errorf("error %v is a %T, want *browser.ParamsError", err, err)
				}
				if got := ruleOf(err); got != g.rule {
					t.Errorf("refused by rule %q, want %q (err: %v)\n%s", got, g.rule, err, g.json)
				}
				return
			}
			var verr *wire.ValidationError
			if err != nil && !errors.As(err, &verr) {
				t.Errorf("error %v is a %T, want *wire.ValidationError", err, err)
			}
		})
	}
}

func TestGoldenNames(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range allGoldens() {
		key := g.kind + "/" + g.name
		if seen[key] {
			t.Errorf("duplicate golden name %q", key)
		}
		seen[key] = true
	}
}

// TestParseSpecExamples checks the decoded values of the spec's examples.
func TestParseSpecExamples(t *testing.T) {
	h, err := wire.ParseHello([]byte(specClientHello))
	if err != nil {
		t.Fatal(err)
	}
	if h.Role != wire.RoleClient || h.Bootstrap != 1 || !h.OffersVersion(wire.Version) ||
		h.Token != "<private IPC token>" || h.JournalKey != strings.Repeat("a", 64) ||
		len(h.RequiredCapabilities) != 19 || h.RequiredCapabilities[0] != browser.CapRuntime ||
		h.Capabilities != nil || h.Instance != nil {
		t.Errorf("client hello decoded as %+v", h)
	}

	h, err = wire.ParseHello([]byte(specProviderHello))
	if err != nil {
		t.Fatal(err)
	}
	wantInstance := wire.Instance{ID: "opaque-instance", Family: "chromium", Brand: "chrome",
		Version: "browser user agent", ProfileLabel: "User-authorized profile"}
	if h.Role != wire.RoleProvider || h.Token != "" || len(h.Capabilities) != 18 ||
		h.Instance == nil || *h.Instance != wantInstance || h.OffersVersion(2) {
		t.Errorf("provider hello decoded as %+v", h)
	}
	if m := wire.Missing(browser.Required(), h.Capabilities); len(m) != 0 {
		t.Errorf("the spec's provider lacks the required capabilities %v", m)
	}

	w, err := wire.ParseWelcome([]byte(specWelcome))
	if err != nil {
		t.Fatal(err)
	}
	if w.Version != 1 || w.ConnectionEpoch != "opaque-new-connection" || len(w.Capabilities) != 21 {
		t.Errorf("welcome decoded as %+v", w)
	}

	h, err = wire.ParseHello([]byte(clientHello.set("versions", `[1.0,2e0,300e-2]`).String()))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(h.Versions) != "[1 2 3]" {
		t.Errorf("versions [1.0,2e0,300e-2] decoded as %v", h.Versions)
	}
}

func TestParseEnvelopeFields(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want wire.Envelope
	}{
		{"request", specRequest.String(), wire.Envelope{Type: "request", ID: "r1", Method: "browser.instances", Params: json.RawMessage(`{}`)}},
		{"success", specSuccess.String(), wire.Envelope{Type: "response", ID: "r1", OK: true, Value: json.RawMessage(`[]`)}},
		{"failure", specFailure.String(), wire.Envelope{Type: "response", ID: "r2", Code: wire.CodeStaleTarget}},
		{"event", specEvent.String(), wire.Envelope{Type: "event", Event: "page.changed", Value: json.RawMessage(`{"tab":"instance:7","leaseId":"lease","sequence":1}`)}},
		{"cancel", specCancel.String(), wire.Envelope{Type: "cancel", ID: "r2"}},
		{"null value", specSuccess.set("value", "null").String(), wire.Envelope{Type: "response", ID: "r1", OK: true, Value: json.RawMessage(`null`)}},
		{"escaped id", specCancel.set("id", `"\u00e9\ud83d\ude00"`).String(), wire.Envelope{Type: "cancel", ID: "é😀"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.ParseEnvelope([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !envelopesEqual(got, &tc.want) {
				t.Errorf("ParseEnvelope = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidationErrorField(t *testing.T) {
	tests := []struct {
		name, kind, in, field string
	}{
		{"missing id", kindEnvelope, specCancel.del("id").String(), "id"},
		{"extra key", kindEnvelope, specCancel.set("x", "1").String(), "x"},
		{"bad code", kindEnvelope, specFailure.set("code", `"NOPE"`).String(), "code"},
		{"bad version", kindHello, clientHello.set("versions", `[1,0]`).String(), "versions[1]"},
		{"bad family", kindHello, providerHello.set("instance", instance.set("family", `"X"`).String()).String(), "instance.family"},
		{"bad kind", kindHello, providerHello.set("kind", `"X"`).String(), "kind"},
		{"instance extra key", kindHello, providerHello.set("instance", instance.set("pid", `1`).String()).String(), "instance.pid"},
		{"welcome epoch", kindWelcome, welcome.set("connectionEpoch", `""`).String(), "connectionEpoch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var verr *wire.ValidationError
			if err := parse(tc.kind, []byte(tc.in)); !errors.As(err, &verr) {
				t.Fatalf("err = %v, want a *wire.ValidationError", err)
			}
			if verr.Field != tc.field {
				t.Errorf("Field = %q, want %q (%v)", verr.Field, tc.field, verr)
			}
		})
	}
}
