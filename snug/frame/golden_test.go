package frame_test

import (
	"fmt"
	"strings"
	"sync"

	"github.com/dsh-browser/broker/internal/jsonmut"
	"github.com/dsh-browser/broker/snug/frame"
)

// golden is one hand-written frame with its expected verdicts.
type golden struct {
	name string
	kind string // the published schema's name: "net-request" for snug:net-request
	json string
	// valid is Go's verdict: Parse accepts the text as a frame of kind.
	valid bool
	// refinement names the prose rule that refuses a frame its schema
	// accepts; "" when the schema's verdict is valid's.
	refinement string
	// goOnly keeps the case out of vectors.json: the text is not JSON, is
	// over a size class, or holds a number JSON.parse rounds.
	goOnly bool
}

// schemaValid is the verdict the published schema must give.
func (g golden) schemaValid() bool { return g.valid || g.refinement != "" }

// kindOf is the schema name of a frame type.
func kindOf(t frame.Type) string { return strings.TrimPrefix(string(t), "snug:") }

// obj is a JSON object under construction: ordered members with raw values.
type obj []kv

type kv struct{ k, v string }

// set returns a copy of o with member k set to the raw JSON v, in place if
// present and appended otherwise.
func (o obj) set(k, v string) obj {
	out := append(obj(nil), o...)
	for i := range out {
		if out[i].k == k {
			out[i].v = v
			return out
		}
	}
	return append(out, kv{k, v})
}

// del returns a copy of o without member k.
func (o obj) del(k string) obj {
	var out obj
	for _, m := range o {
		if m.k != k {
			out = append(out, m)
		}
	}
	return out
}

func (o obj) has(k string) bool {
	for _, m := range o {
		if m.k == k {
			return true
		}
	}
	return false
}

func (o obj) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jstr(m.k) + ":" + m.v)
	}
	b.WriteByte('}')
	return b.String()
}

var jstr = jsonmut.Quote

// Strings of n code points made of 1-, 2-, 3- and 4-byte characters (the
// last is a surrogate pair in JavaScript).
var runeSets = []struct{ name, r string }{{"ascii", "x"}, {"2-byte", "é"}, {"3-byte", "中"}, {"4-byte", "😀"}}

func head(t frame.Type) obj { return obj{{"v", "1"}, {"type", jstr(string(t))}} }

func errorObj(extra ...kv) obj {
	return append(obj{{"code", `"PARSE_FAILED"`}, {"message", `"the reply did not parse"`}, {"retryable", "true"},
		{"rawExcerpt", `"Sure! Here"`}, {"attemptsRemaining", "2"}}, extra...)
}

// The base frames: one valid frame of each shape.
var (
	announce = head(frame.TypeAppAnnounce).set("appId", `"notes"`).set("displayName", `"Notes"`).
			set("description", `"Quick notes"`).set("iconEmoji", `"📝"`).set("iconColor", `"#ffcc00"`)
	capabilities = obj{{"streaming", "true"}, {"db", "true"}, {"auth", "false"}, {"net", "true"}, {"openUrl", "false"}}
	hostReady    = head(frame.TypeHostReady).set("instanceId", `"ins-1"`).set("protocolVersions", "[1]").
			set("capabilities", capabilities.String()).set("theme", `"light"`).set("locale", `"en-US"`)
	appMessage = head(frame.TypeAppMessage).set("requestId", `"r1"`).set("instanceId", `"ins-1"`).
			set("appId", `"notes"`).set("action", `"summarize"`).set("payload", `{"text":"hello"}`).
			set("state", `{"notes":[1,2]}`).set("responseSchema", `{"type":"object"}`)
	appCancel  = head(frame.TypeAppCancel).set("requestId", `"r1"`).set("instanceId", `"ins-1"`)
	streamResp = head(frame.TypeAppResponse).set("requestId", `"r1"`).set("ok", "true").set("streaming", "true").set("text", `"Hel"`).set("seq", "0")
	finalResp  = head(frame.TypeAppResponse).set("requestId", `"r1"`).set("ok", "true").set("streaming", "false").set("data", `{"message":"Hello"}`)
	errorResp  = head(frame.TypeAppResponse).set("requestId", `"r1"`).set("ok", "false").set("error", errorObj().String())
	dbHead     = head(frame.TypeDBRequest).set("requestId", `"d1"`).set("instanceId", `"ins-1"`)
	dbExec     = dbHead.set("op", `"exec"`).set("sql", `"SELECT * FROM notes WHERE id = ?"`).set("params", `[1]`)
	dbExport   = dbHead.set("op", `"export"`)
	dbImport   = dbHead.set("op", `"import"`).set("bytesBase64", `"U1FMaXRl"`)
	dbKVGet    = dbHead.set("op", `"kvGet"`).set("key", `"draft"`)
	dbKVSet    = dbHead.set("op", `"kvSet"`).set("key", `"draft"`).set("value", `{"text":"hi"}`)
	dbResult   = head(frame.TypeDBResponse).set("requestId", `"d1"`).set("ok", "true").set("rows", `[[1,"a"],[2,null]]`).set("columns", `["id","text"]`)
	dbError    = head(frame.TypeDBResponse).set("requestId", `"d1"`).set("ok", "false").set("error", errorObj().String())
	netHeaders = obj{{"Content-Type", `"application/json"`}, {"Accept", `"application/json"`}}
	netRequest = head(frame.TypeNetRequest).set("requestId", `"n1"`).set("instanceId", `"ins-1"`).
			set("url", `"https://api.example.com/items?page=2"`).set("method", `"POST"`).
			set("headers", netHeaders.String()).set("body", `"{\"name\":\"x\"}"`)
	netGet    = netRequest.set("method", `"GET"`).del("body")
	netResult = head(frame.TypeNetResponse).set("requestId", `"n1"`).set("ok", "true").set("status", "200").
			set("headers", `{"content-type":"application/json","x-ratelimit-remaining":"9"}`).set("body", `"{}"`).set("truncated", "false")
	netError     = head(frame.TypeNetResponse).set("requestId", `"n1"`).set("ok", "false").set("error", errorObj().String())
	openURL      = head(frame.TypeOpenURLRequest).set("requestId", `"o1"`).set("instanceId", `"ins-1"`).set("url", `"https://example.com/docs"`)
	openResult   = head(frame.TypeOpenURLResult).set("requestId", `"o1"`).set("status", `"declined"`).set("reason", `"the user declined"`)
	openURLQuery = openURL.set("url", `"https://docs.example.org/guide?lang=en#setup"`)
	openOpened   = head(frame.TypeOpenURLResult).set("requestId", `"o2"`).set("status", `"opened"`)
	hostEvent    = head(frame.TypeHostEvent).set("event", `"theme-change"`).set("data", `{"theme":"dark"}`)
	appEvent     = head(frame.TypeAppEvent).set("event", `"resize"`).set("data", `{"height":480}`)
)

// base is one valid frame with what its schema says of each member.
type base struct {
	name     string
	obj      obj
	required []string // besides v and type
	strict   bool
}

var bases = []base{
	{"announce", announce, []string{"appId", "displayName"}, false},
	{"host-ready", hostReady, []string{"instanceId", "protocolVersions", "capabilities", "theme"}, false},
	{"app-message", appMessage, []string{"requestId", "instanceId", "appId", "action"}, false},
	{"app-cancel", appCancel, []string{"requestId", "instanceId"}, false},
	{"streaming response", streamResp, []string{"requestId", "ok", "streaming", "text"}, false},
	{"final response", finalResp, []string{"requestId", "ok", "streaming", "data"}, false},
	{"error response", errorResp, []string{"requestId", "ok", "error"}, false},
	{"db exec", dbExec, []string{"requestId", "instanceId", "op", "sql"}, false},
	{"db export", dbExport, []string{"requestId", "instanceId", "op"}, false},
	{"db import", dbImport, []string{"requestId", "instanceId", "op", "bytesBase64"}, false},
	{"db kvGet", dbKVGet, []string{"requestId", "instanceId", "op", "key"}, false},
	{"db kvSet", dbKVSet, []string{"requestId", "instanceId", "op", "key", "value"}, false},
	{"db result", dbResult, []string{"requestId", "ok"}, false},
	{"db error", dbError, []string{"requestId", "ok", "error"}, false},
	{"net-request", netRequest, []string{"requestId", "instanceId", "url", "method"}, true},
	{"net GET", netGet, []string{"requestId", "instanceId", "url", "method"}, true},
	{"net result", netResult, []string{"requestId", "ok", "status", "headers", "body"}, true},
	{"net error", netError, []string{"requestId", "ok", "error"}, true},
	{"open-url-request", openURL, []string{"requestId", "instanceId", "url"}, true},
	{"open-url-request with a query", openURLQuery, []string{"requestId", "instanceId", "url"}, true},
	{"open-url-result", openResult, []string{"requestId", "status"}, true},
	{"open-url-result opened", openOpened, []string{"requestId", "status"}, true},
	{"host-event", hostEvent, []string{"event"}, false},
	{"app-event", appEvent, []string{"event"}, false},
}

// nameOf is the name of the base frame o.
func nameOf(o obj) string {
	for _, b := range bases {
		if b.obj.String() == o.String() {
			return b.name
		}
	}
	panic("not a base: " + o.String())
}

func (b base) kind() string {
	for _, m := range b.obj {
		if m.k == "type" {
			return strings.TrimPrefix(strings.Trim(m.v, `"`), "snug:")
		}
	}
	panic("base without type")
}

// lengthCase is a string member bounded in characters.
type lengthCase struct {
	base     obj
	field    string
	min, max int
}

// goldens returns every golden case (built once: some are megabytes).
var goldens = sync.OnceValue(func() []golden {
	var out []golden
	add := func(name, kind, json string, valid bool) {
		out = append(out, golden{name: name, kind: kind, json: json, valid: valid})
	}

	for _, b := range bases {
		k := b.kind()
		add(b.name, k, b.obj.String(), true)
		for _, m := range b.obj {
			required := m.k == "v" || m.k == "type"
			for _, r := range b.required {
				required = required || r == m.k
			}
			add(b.name+" without "+m.k, k, b.obj.del(m.k).String(), !required)
		}
		for _, extra := range []string{"extra", "appId", "toString", "__proto__", "V", ""} {
			if b.obj.has(extra) {
				continue
			}
			add(fmt.Sprintf("%s with unknown key %q", b.name, extra), k, b.obj.set(extra, `"x"`).String(), !b.strict)
		}
		// R1: v is the number 1.
		for _, v := range []string{"1.0", "1e0", "10e-1", "0.1e1", "1E+0"} {
			add(b.name+" v "+v, k, b.obj.set("v", v).String(), true)
		}
		for _, v := range []string{"2", "0", "-1", "1.5", `"1"`, "true", "null", "[1]", "{}"} {
			add(b.name+" v "+v, k, b.obj.set("v", v).String(), false)
		}
		// The type names the schema; any other is another frame or none.
		for _, typ := range []string{`"snug:app-announce"`, `"snug:future-frame"`, `"SNUG:` + k + `"`, `"` + k + `"`, `"snug:` + k + ` "`, `null`, `1`, `["snug:` + k + `"]`} {
			if typ != `"snug:`+k+`"` {
				add(b.name+" type "+typ, k, b.obj.set("type", typ).String(), false)
			}
		}
		// Every string member rejects other JSON types.
		for _, m := range b.obj {
			if strings.HasPrefix(m.v, `"`) && m.k != "type" {
				for _, v := range []string{"1", "null", "true", "[]", "{}"} {
					add(b.name+" "+m.k+" "+v, k, b.obj.set(m.k, v).String(), false)
				}
			}
		}
	}

	// String bounds, counted in code points: at the limit and just past it.
	lengths := []lengthCase{
		{base: appMessage, field: "requestId", min: 1, max: frame.MaxIDChars},
		{base: appMessage, field: "instanceId", min: 1, max: frame.MaxIDChars},
		{base: appMessage, field: "appId", min: 1, max: frame.MaxIDChars},
		{base: appMessage, field: "action", min: 1, max: frame.MaxIDChars},
		{base: appCancel, field: "requestId", min: 1, max: frame.MaxIDChars},
		{base: appCancel, field: "instanceId", min: 1, max: frame.MaxIDChars},
		{base: announce, field: "appId", min: 1, max: frame.MaxIDChars},
		{base: announce, field: "displayName", min: 1, max: frame.MaxDisplayNameChars},
		{base: announce, field: "description", max: frame.MaxDescriptionChars},
		{base: announce, field: "iconEmoji", max: frame.MaxIconEmojiChars},
		{base: announce, field: "iconColor", max: frame.MaxIconColorChars},
		{base: hostReady, field: "instanceId", min: 1, max: frame.MaxIDChars},
		{base: hostReady, field: "locale", max: frame.MaxLocaleChars},
		{base: streamResp, field: "requestId", min: 1, max: frame.MaxIDChars},
		{base: dbExec, field: "requestId", min: 1, max: frame.MaxIDChars},
		{base: dbKVGet, field: "key", min: 1, max: frame.MaxKVKeyChars},
		{base: dbKVSet, field: "key", min: 1, max: frame.MaxKVKeyChars},
		{base: netRequest, field: "requestId", min: 1, max: frame.MaxIDChars},
		{base: netRequest, field: "instanceId", min: 1, max: frame.MaxIDChars},
		{base: netResult, field: "requestId", min: 1, max: frame.MaxIDChars},
		{base: openURL, field: "requestId", min: 1, max: frame.MaxIDChars},
		{base: openResult, field: "requestId", min: 1, max: frame.MaxIDChars},
		{base: openResult, field: "reason", max: frame.MaxOpenURLReasonChars},
		{base: hostEvent, field: "event", min: 1, max: frame.MaxEventChars},
		{base: appEvent, field: "event", min: 1, max: frame.MaxEventChars},
	}
	for _, l := range lengths {
		k, name := base{obj: l.base}.kind(), nameOf(l.base)
		for _, rs := range runeSets {
			add(fmt.Sprintf("%s %s of %d %s", name, l.field, l.max, rs.name), k, l.base.set(l.field, jstr(strings.Repeat(rs.r, l.max))).String(), true)
			add(fmt.Sprintf("%s %s of %d %s", name, l.field, l.max+1, rs.name), k, l.base.set(l.field, jstr(strings.Repeat(rs.r, l.max+1))).String(), false)
		}
		add(fmt.Sprintf("%s %s of %d escaped surrogate pairs", name, l.field, l.max), k, l.base.set(l.field, `"`+strings.Repeat(`\ud83d\ude00`, l.max)+`"`).String(), true)
		add(fmt.Sprintf("%s %s empty", name, l.field), k, l.base.set(l.field, `""`).String(), l.min == 0)
	}
	// URLs: the schema's bounds; what lies within is the prose's (§3, §4).
	netURL := func(n int) string { p := "https://api.example.com/"; return jstr(p + strings.Repeat("a", n-len(p))) }
	add("net url of 4096", "net-request", netRequest.set("url", netURL(frame.MaxNetURLChars)).String(), true)
	add("net url of 4097", "net-request", netRequest.set("url", netURL(frame.MaxNetURLChars+1)).String(), false)
	add("net url empty", "net-request", netRequest.set("url", `""`).String(), false)
	openURLOf := func(n int) string { p := "https://example.com/"; return jstr(p + strings.Repeat("é", n-len(p))) }
	add("open url of 2048", "open-url-request", openURL.set("url", openURLOf(frame.MaxOpenURLChars)).String(), true)
	add("open url of 2049", "open-url-request", openURL.set("url", openURLOf(frame.MaxOpenURLChars+1)).String(), false)
	add("open url empty", "open-url-request", openURL.set("url", `""`).String(), false)

	out = append(out, hostReadyGoldens()...)
	out = append(out, responseGoldens()...)
	out = append(out, dbGoldens()...)
	out = append(out, netGoldens()...)
	out = append(out, openURLGoldens()...)
	out = append(out, sizeGoldens()...)
	out = append(out, notJSONGoldens()...)
	return out
})

func hostReadyGoldens() []golden {
	var out []golden
	add := func(name, json string, valid bool) {
		out = append(out, golden{name: "host-ready " + name, kind: "host-ready", json: json, valid: valid})
	}
	for _, v := range []string{"[]", "[1,2]", "[2]", "[1.0]", "[9007199254740991]", "[1e2]"} {
		add("protocolVersions "+v, hostReady.set("protocolVersions", v).String(), true)
	}
	for _, v := range []string{"[0]", "[-1]", "[1.5]", `["1"]`, "[null]", "[9007199254740992]", "1", "{}", "[[1]]"} {
		add("protocolVersions "+v, hostReady.set("protocolVersions", v).String(), false)
	}
	for _, m := range capabilities {
		required := m.k == "streaming" || m.k == "db" || m.k == "auth"
		add("capabilities without "+m.k, hostReady.set("capabilities", capabilities.del(m.k).String()).String(), !required)
		add("capabilities "+m.k+" string", hostReady.set("capabilities", capabilities.set(m.k, `"true"`).String()).String(), false)
		add("capabilities "+m.k+" null", hostReady.set("capabilities", capabilities.set(m.k, `null`).String()).String(), false)
	}
	add("capabilities access true", hostReady.set("capabilities", capabilities.set("access", "true").String()).String(), true)
	add("capabilities access string", hostReady.set("capabilities", capabilities.set("access", `"yes"`).String()).String(), false)
	add("capabilities unknown flag", hostReady.set("capabilities", capabilities.set("teleport", `"yes"`).String()).String(), true)
	add("capabilities array", hostReady.set("capabilities", "[]").String(), false)
	for _, th := range []string{`"dark"`, `"light"`} {
		add("theme "+th, hostReady.set("theme", th).String(), true)
	}
	for _, th := range []string{`"Dark"`, `"sepia"`, `""`, `"light "`} {
		add("theme "+th, hostReady.set("theme", th).String(), false)
	}
	return out
}

func responseGoldens() []golden {
	var out []golden
	add := func(name, json string, valid bool) {
		out = append(out, golden{name: "app-response " + name, kind: "app-response", json: json, valid: valid})
	}
	for _, s := range []string{"0", "1", "7.0", "9007199254740991"} {
		add("seq "+s, streamResp.set("seq", s).String(), true)
	}
	for _, s := range []string{"-1", "1.5", `"1"`, "null", "9007199254740992", "1e16"} {
		add("seq "+s, streamResp.set("seq", s).String(), false)
	}
	add("streaming empty text", streamResp.set("text", `""`).String(), true)
	add("streaming with data anything", streamResp.set("data", `7`).String(), true)
	add("final with text anything", finalResp.set("text", `7`).set("seq", `-1`).String(), true)
	add("final data empty object", finalResp.set("data", `{}`).String(), true)
	for _, d := range []string{"[]", "null", `"x"`, "1", "[{}]"} {
		add("final data "+d, finalResp.set("data", d).String(), false)
	}
	add("streaming without text", streamResp.del("text").String(), false)
	add("ok true without streaming", finalResp.del("streaming").String(), false)
	add("ok false with streaming anything", errorResp.set("streaming", `"maybe"`).set("text", `1`).String(), true)
	add("ok false with data", errorResp.set("data", `{}`).String(), true)
	add("ok false without error", errorResp.del("error").String(), false)
	add("ok true with only error", errorResp.set("ok", "true").String(), false)
	for _, ok := range []string{`"true"`, "1", "null"} {
		add("ok "+ok, finalResp.set("ok", ok).String(), false)
	}
	add("streaming string", streamResp.set("streaming", `"true"`).String(), false)
	errorCases(add, errorResp)
	return out
}

// errorCases adds the cases of the shared error object of a response o.
func errorCases(add func(string, string, bool), o obj) {
	e := errorObj()
	with := func(x obj) string { return o.set("error", x.String()).String() }
	add("error minimal", with(obj{{"code", `"HOST_ERROR"`}, {"message", `""`}, {"retryable", "false"}}), true)
	for _, f := range []string{"code", "message", "retryable"} {
		add("error without "+f, with(e.del(f)), false)
	}
	for _, f := range []string{"rawExcerpt", "attemptsRemaining"} {
		add("error without "+f, with(e.del(f)), true)
	}
	add("error with unknown member", with(e.set("detail", `{"a":1}`)), true)
	add("error open code", with(e.set("code", `"SOME_FUTURE_CODE"`)), true)
	for _, c := range append(frame.Codes[:], frame.NetCodes[:]...) {
		add("error code "+c, with(e.set("code", jstr(c))), true)
	}
	add("error code MALFORMED", with(e.set("code", `"MALFORMED"`)), true)
	add("error code of 64", with(e.set("code", jstr(strings.Repeat("A", 64)))), true)
	add("error code of 65", with(e.set("code", jstr(strings.Repeat("A", 65)))), false)
	add("error code empty", with(e.set("code", `""`)), false)
	for _, rs := range runeSets {
		add("error rawExcerpt of 200 "+rs.name, with(e.set("rawExcerpt", jstr(strings.Repeat(rs.r, 200)))), true)
		add("error rawExcerpt of 201 "+rs.name, with(e.set("rawExcerpt", jstr(strings.Repeat(rs.r, 201)))), false)
	}
	for _, n := range []string{"0", "3", "2.0", "9007199254740991"} {
		add("error attemptsRemaining "+n, with(e.set("attemptsRemaining", n)), true)
	}
	for _, n := range []string{"-1", "0.5", `"2"`, "null", "9007199254740992"} {
		add("error attemptsRemaining "+n, with(e.set("attemptsRemaining", n)), false)
	}
	add("error retryable string", with(e.set("retryable", `"true"`)), false)
	add("error message number", with(e.set("message", `1`)), false)
	add("error array", o.set("error", `[]`).String(), false)
}

func dbGoldens() []golden {
	var out []golden
	add := func(name, kind, json string, valid bool) {
		out = append(out, golden{name: name, kind: kind, json: json, valid: valid})
	}
	for _, op := range []string{`"EXEC"`, `"query"`, `""`, `null`, `1`} {
		add("db op "+op, "db-request", dbExec.set("op", op).String(), false)
	}
	add("db exec sql empty", "db-request", dbExec.set("sql", `""`).String(), false)
	add("db exec params empty", "db-request", dbExec.set("params", `[]`).String(), true)
	add("db exec params mixed", "db-request", dbExec.set("params", `[null,"a",1.5,{"x":[]}]`).String(), true)
	add("db exec params object", "db-request", dbExec.set("params", `{}`).String(), false)
	add("db exec params null", "db-request", dbExec.set("params", `null`).String(), false)
	add("db exec with another op's key", "db-request", dbExec.set("key", `7`).String(), true)
	add("db export with sql anything", "db-request", dbExport.set("sql", `7`).String(), true)
	add("db import empty", "db-request", dbImport.set("bytesBase64", `""`).String(), false)
	add("db kvSet value null", "db-request", dbKVSet.set("value", `null`).String(), true)
	add("db kvSet value false", "db-request", dbKVSet.set("value", `false`).String(), true)
	add("db kvGet with value anything", "db-request", dbKVGet.set("value", `[1]`).String(), true)
	add("db kvGet key of 256", "db-request", dbKVGet.set("key", jstr(strings.Repeat("k", 256))).String(), true)
	add("db kvGet key of 257", "db-request", dbKVGet.set("key", jstr(strings.Repeat("k", 257))).String(), false)

	add("db result minimal", "db-response", dbResult.del("rows").del("columns").String(), true)
	add("db result value null", "db-response", dbResult.set("value", `null`).String(), true)
	add("db result bytesBase64 empty", "db-response", dbResult.set("bytesBase64", `""`).String(), true)
	add("db result rows empty", "db-response", dbResult.set("rows", `[]`).String(), true)
	add("db result rows of empty rows", "db-response", dbResult.set("rows", `[[],[]]`).String(), true)
	for _, rows := range []string{`[1]`, `[[1],2]`, `[{}]`, `{}`, `null`, `[null]`} {
		add("db result rows "+rows, "db-response", dbResult.set("rows", rows).String(), false)
	}
	for _, cols := range []string{`["a",1]`, `[null]`, `"a"`, `{}`} {
		add("db result columns "+cols, "db-response", dbResult.set("columns", cols).String(), false)
	}
	add("db result bytesBase64 number", "db-response", dbResult.set("bytesBase64", `1`).String(), false)
	add("db error with rows anything", "db-response", dbError.set("rows", `1`).String(), true)
	errorCases(func(name, json string, valid bool) { add("db-response "+name, "db-response", json, valid) }, dbError)
	return out
}

func netGoldens() []golden {
	var out []golden
	add := func(name, kind, json string, valid bool) {
		out = append(out, golden{name: name, kind: kind, json: json, valid: valid})
	}
	refined := func(name, json, rule string) {
		out = append(out, golden{name: name, kind: "net-request", json: json, refinement: rule})
	}
	for _, m := range frame.NetMethods {
		o := netRequest.set("method", jstr(m))
		if m == "GET" || m == "HEAD" {
			refined("net "+m+" with a body", o.String(), ruleBodyOnGet)
			refined("net "+m+" with an empty body", o.set("body", `""`).String(), ruleBodyOnGet)
			add("net "+m+" without a body", "net-request", o.del("body").String(), true)
		} else {
			add("net "+m+" with a body", "net-request", o.String(), true)
			add("net "+m+" without a body", "net-request", o.del("body").String(), true)
		}
	}
	for _, m := range []string{`"get"`, `"Post"`, `"OPTIONS"`, `"CONNECT"`, `"TRACE"`, `""`, `null`} {
		add("net method "+m, "net-request", netRequest.set("method", m).String(), false)
	}
	for _, name := range frame.StripHeaders {
		for _, spelled := range []string{name, strings.ToUpper(name), strings.ToUpper(name[:1]) + name[1:]} {
			refined("net credential header "+spelled, netGet.set("headers", netHeaders.set(spelled, `"secret-value"`).String()).String(), ruleCredentialHeader)
		}
	}
	refined("net credential header with an empty value", netGet.set("headers", obj{{"authorization", `""`}}.String()).String(), ruleCredentialHeader)
	for _, name := range []string{"X-Authorization", "Authorization-Extra", "x-api-keys", "cookie2", "proxy-authenticate", "Set-Cookie2"} {
		add("net header "+name, "net-request", netGet.set("headers", obj{{name, `"v"`}}.String()).String(), true)
	}
	add("net headers empty", "net-request", netGet.set("headers", `{}`).String(), true)
	add("net header name of 128", "net-request", netGet.set("headers", obj{{strings.Repeat("h", 128), `"v"`}}.String()).String(), true)
	add("net header name of 129", "net-request", netGet.set("headers", obj{{strings.Repeat("h", 129), `"v"`}}.String()).String(), false)
	add("net header name empty", "net-request", netGet.set("headers", obj{{"", `"v"`}}.String()).String(), false)
	add("net header value of 4096", "net-request", netGet.set("headers", obj{{"Accept", jstr(strings.Repeat("v", 4096))}}.String()).String(), true)
	add("net header value of 4097", "net-request", netGet.set("headers", obj{{"Accept", jstr(strings.Repeat("v", 4097))}}.String()).String(), false)
	add("net header value empty", "net-request", netGet.set("headers", obj{{"Accept", `""`}}.String()).String(), true)
	for _, v := range []string{"1", "null", `["a"]`, "true"} {
		add("net header value "+v, "net-request", netGet.set("headers", obj{{"Accept", v}}.String()).String(), false)
	}
	add("net headers array", "net-request", netGet.set("headers", `[]`).String(), false)
	add("net headers null", "net-request", netGet.set("headers", `null`).String(), false)
	add("net url http (the executor's gate, not the frame's)", "net-request", netGet.set("url", `"http://example.com/"`).String(), true)
	add("net body number", "net-request", netRequest.set("body", `1`).String(), false)
	add("net body null", "net-request", netRequest.set("body", `null`).String(), false)
	add("net with appId", "net-request", netRequest.set("appId", `"notes"`).String(), false)

	add("net result status 100", "net-response", netResult.set("status", "100").String(), true)
	add("net result status 599", "net-response", netResult.set("status", "599").String(), true)
	add("net result status 2e2", "net-response", netResult.set("status", "2e2").String(), true)
	for _, s := range []string{"99", "600", "200.5", `"200"`, "null", "-200"} {
		add("net result status "+s, "net-response", netResult.set("status", s).String(), false)
	}
	add("net result headers empty", "net-response", netResult.set("headers", `{}`).String(), true)
	add("net result header named empty", "net-response", netResult.set("headers", `{"":"x"}`).String(), true)
	add("net result header value number", "net-response", netResult.set("headers", `{"etag":1}`).String(), false)
	add("net result truncated true", "net-response", netResult.set("truncated", "true").String(), true)
	add("net result truncated string", "net-response", netResult.set("truncated", `"no"`).String(), false)
	add("net result body number", "net-response", netResult.set("body", `1`).String(), false)
	add("net error with status", "net-response", netError.set("status", "200").String(), false)
	add("net result with error", "net-response", netResult.set("error", errorObj().String()).String(), false)
	errorCases(func(name, json string, valid bool) { add("net-response "+name, "net-response", json, valid) }, netError)

	for _, s := range []string{`"opened"`, `"refused"`} {
		add("open-url-result status "+s, "open-url-result", openResult.set("status", s).String(), true)
	}
	for _, s := range []string{`"Opened"`, `"failed"`, `""`} {
		add("open-url-result status "+s, "open-url-result", openResult.set("status", s).String(), false)
	}
	return out
}

// The prose rules that refuse frames their schema accepts (Appendix C:
// "the schemas for the strict frames are deliberately weaker than the frame
// rules"), each checked by its own cases and by the agreement test.
const (
	ruleSizeClass        = "R6: a frame over its size class"
	ruleBodyOnGet        = "§3: a body on GET or HEAD"
	ruleCredentialHeader = "§3, C1: a credential-shaped header"
	ruleOpenURL          = "§4: an open-url that does not parse, is not https:, or carries userinfo"
)

func openURLGoldens() []golden {
	var out []golden
	add := func(name, url string, valid bool) {
		g := golden{name: "open url " + name, kind: "open-url-request", json: openURL.set("url", jstr(url)).String(), valid: valid}
		if !valid {
			g.refinement = ruleOpenURL
		}
		out = append(out, g)
	}
	for _, u := range []string{
		"https://example.com", "https://example.com/", "HTTPS://EXAMPLE.COM/Docs", "https://example.com:8443/a?b=c#d",
		"https://xn--bcher-kva.example/", "https://bücher.example/", "https://[2001:db8::1]/", "https://127.0.0.1/",
		"https://example.com/@user", "https://example.com/?email=a@b.c", "https://example.com/a%20b",
	} {
		add(u, u, true)
	}
	for _, u := range []string{
		"http://example.com/", "javascript:alert(1)", "data:text/html,hi", "file:///etc/passwd", "ftp://example.com/",
		"chrome://settings", "//example.com/", "/relative", "example.com", "https:example.com", "https:/example.com",
		"https://user@example.com/", "https://user:pass@example.com/", "https://:pass@example.com/", "https://@example.com/",
		"https://example.com@evil.example/", "https://", "https:///path", "https://exa mple.com/", " https://example.com/",
		"https://example.com/\n", "https://exa\tmple.com/", "https:\\\\evil.example", "https://good.example\\@evil.example/",
		"https://example.com:99999/", "https://example.com:-1/", "https://[::1%25eth0]/", "https://[not-ip]/",
		"https://exa<mple.com/", "https://exa^mple.com/", "https://exa|mple.com/", "https://%25.example/",
	} {
		add(u, u, false)
	}
	return out
}

// sizeGoldens are frames at and just past each size class (R6): the
// schemas do not bound bytes, so the one past is a refinement.
func sizeGoldens() []golden {
	var out []golden
	// pad returns o with member k set to a string that makes the frame
	// exactly n bytes.
	pad := func(o obj, k string, n int) string {
		empty := len(o.set(k, `""`).String())
		return o.set(k, jstr(strings.Repeat("a", n-empty))).String()
	}
	add := func(name, kind, json string, valid bool) {
		g := golden{name: name, kind: kind, json: json, valid: valid, goOnly: true}
		if !valid {
			g.refinement = ruleSizeClass
		}
		out = append(out, g)
	}
	for _, s := range []struct {
		name  string
		o     obj
		k     string
		limit int
	}{
		{"app-message", appMessage, "padding", frame.MaxFrameBytes},
		{"announce", announce, "padding", frame.MaxFrameBytes},
		{"host-event", hostEvent, "padding", frame.MaxFrameBytes},
		{"db exec", dbExec, "sql", frame.MaxDBFrameBytes},
		{"db result", dbResult, "bytesBase64", frame.MaxDBFrameBytes},
		{"net result", netResult, "body", frame.MaxNetFrameBytes},
	} {
		k := base{obj: s.o}.kind()
		add(fmt.Sprintf("%s of %d bytes", s.name, s.limit), k, pad(s.o, s.k, s.limit), true)
		add(fmt.Sprintf("%s of %d bytes", s.name, s.limit+1), k, pad(s.o, s.k, s.limit+1), false)
	}
	// A net-request at its class: a 262,144-character body and headers of
	// 4,096-character values make up the rest.
	netAt := func(n int) string {
		o := netRequest.set("body", jstr(strings.Repeat("b", frame.MaxNetRequestBodyChars)))
		room := n - len(o.set("headers", "{}").String()) // for the members of headers
		var h []string
		for i := 0; room > 0; i++ {
			name := jstr(fmt.Sprintf("X-Fill-%03d", i))
			cost := len(name) + 3 // the colon and the value's quotes
			if i > 0 {
				cost++ // the comma
			}
			v := min(room-cost, frame.MaxHeaderValueChars)
			if left := room - cost - v; left > 0 && left < 17 {
				v -= 17 // leave room for one more header
			}
			entry := name + ":" + jstr(strings.Repeat("v", v))
			if i > 0 {
				entry = "," + entry
			}
			h = append(h, entry)
			room -= cost + v
		}
		return o.set("headers", "{"+strings.Join(h, "")+"}").String()
	}
	add(fmt.Sprintf("net-request of %d bytes", frame.MaxNetFrameBytes), "net-request", netAt(frame.MaxNetFrameBytes), true)
	add(fmt.Sprintf("net-request of %d bytes", frame.MaxNetFrameBytes+1), "net-request", netAt(frame.MaxNetFrameBytes+1), false)
	// The body bound itself, in characters.
	body := func(n int, r string) string { return netRequest.set("body", jstr(strings.Repeat(r, n))).String() }
	out = append(out,
		golden{name: "net body of 262144", kind: "net-request", json: body(frame.MaxNetRequestBodyChars, "b"), valid: true, goOnly: true},
		golden{name: "net body of 262145", kind: "net-request", json: body(frame.MaxNetRequestBodyChars+1, "b"), goOnly: true},
		golden{name: "net body of 262144 é", kind: "net-request", json: body(frame.MaxNetRequestBodyChars, "é"), valid: true, goOnly: true},
		golden{name: "net body of 262145 é", kind: "net-request", json: body(frame.MaxNetRequestBodyChars+1, "é"), goOnly: true},
	)
	return out
}

// notJSONGoldens are texts that are not one JSON object, and numbers that
// JSON.parse would round (so the JavaScript side could not agree).
func notJSONGoldens() []golden {
	var out []golden
	c := appCancel.String()
	for _, tc := range []struct{ name, text string }{
		{"empty", ""}, {"whitespace", " \n"}, {"unterminated", c[:len(c)-1]}, {"trailing garbage", c + " x"},
		{"two objects", c + c}, {"byte order mark", "\ufeff" + c}, {"non-breaking space before", "\u00a0" + c},
		{"single quotes", `{'v':1}`}, {"trailing comma", c[:len(c)-1] + ",}"}, {"comment", "/**/" + c},
		{"top-level array", "[" + c + "]"}, {"top-level string", jstr(c)}, {"null", "null"},
	} {
		out = append(out, golden{name: "not a frame: " + tc.name, kind: "app-cancel", json: tc.text, goOnly: true})
	}
	out = append(out,
		golden{name: "JSON whitespace around", kind: "app-cancel", json: " \r\n\t" + c + "\n ", valid: true, goOnly: true},
		golden{name: "escaped keys", kind: "app-cancel", json: `{"\u0076":1,"typ\u0065":"snug:app-cancel","requestId":"r1","instanceId":"i"}`, valid: true},
		golden{name: "repeated key, last wins valid", kind: "app-cancel", json: `{"v":2,"type":"snug:app-cancel","requestId":"r1","instanceId":"i","v":1}`, valid: true},
		golden{name: "repeated key, last wins invalid", kind: "app-cancel", json: `{"v":1,"type":"snug:app-cancel","requestId":"r1","instanceId":"i","requestId":""}`},
		golden{name: "invalid UTF-8 in requestId reads as U+FFFD", kind: "app-cancel", json: "{\"v\":1,\"type\":\"snug:app-cancel\",\"requestId\":\"\xff\",\"instanceId\":\"i\"}", valid: true, goOnly: true},
		golden{name: "128 invalid bytes in requestId", kind: "app-cancel", json: "{\"v\":1,\"type\":\"snug:app-cancel\",\"requestId\":\"" + strings.Repeat("\xff", 128) + "\",\"instanceId\":\"i\"}", valid: true, goOnly: true},
		golden{name: "129 invalid bytes in requestId", kind: "app-cancel", json: "{\"v\":1,\"type\":\"snug:app-cancel\",\"requestId\":\"" + strings.Repeat("\xff", 129) + "\",\"instanceId\":\"i\"}", goOnly: true},
	)
	for _, v := range []string{"1.0000000000000001", "0.99999999999999999", "1e1000001", "1e-1000001", "0e99999999999", "1e99999999999999999999", "100000000000000000000e-20"} {
		out = append(out, golden{name: "v " + v, kind: "app-cancel", json: appCancel.set("v", v).String(), valid: v == "100000000000000000000e-20", goOnly: true})
	}
	for _, s := range []string{"1.0000000000000001", "1e400", "9007199254740991.0000001", "9007199254740991e0", "-0"} {
		out = append(out, golden{name: "seq " + s, kind: "app-response", json: streamResp.set("seq", s).String(),
			valid: s == "9007199254740991e0" || s == "-0", goOnly: true})
	}
	return out
}
