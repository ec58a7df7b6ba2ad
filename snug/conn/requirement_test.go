package conn_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/conn"
)

// base is a valid api_key requirement as a JSON value; tests change it.
func base() map[string]any {
	return map[string]any{
		"slot":     "todo",
		"provider": map[string]any{"name": "Todo Cloud", "docsUrl": "https://docs.todo.example/api"},
		"kind":     "api_key",
		"fields": []any{
			map[string]any{"key": "api_key", "label": "API key", "type": "secret"},
		},
		"registration": map[string]any{
			"consoleUrl":   "https://console.todo.example/keys",
			"instructions": []any{"Open the console.", "Create a key named Snug."},
		},
		"request":          map[string]any{"headerTemplate": map[string]any{"X-Api-Key": "{{api_key}}"}},
		"declaredApiHosts": []any{"api.todo.example"},
	}
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t testing.TB, v any) (*conn.Requirement, error) {
	t.Helper()
	return conn.Parse(encode(t, v))
}

// set changes the value at a dotted path of m ("fields.0.label"); nil
// deletes it.
func set(m map[string]any, path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	var cur any = m
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if v == nil {
					delete(c, p)
				} else {
					c[p] = v
				}
				return m
			}
			if c[p] == nil {
				c[p] = map[string]any{}
			}
			cur = c[p]
		case []any:
			var n int
			fmt.Sscan(p, &n)
			if last {
				c[n] = v
				return m
			}
			cur = c[n]
		}
	}
	return m
}

func mustParse(t *testing.T, v any) *conn.Requirement {
	t.Helper()
	r, err := parse(t, v)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustRefuse(t *testing.T, what string, v any) {
	t.Helper()
	_, err := parse(t, v)
	if !errors.Is(err, conn.ErrInvalid) {
		t.Errorf("%s: accepted (err %v)", what, err)
	}
}

func TestParseBase(t *testing.T) {
	r := mustParse(t, base())
	if r.Slot != "todo" || r.Kind != conn.KindAPIKey || r.Fields[0].Key != "api_key" || !r.Fields[0].IsRequired() {
		t.Fatalf("%+v", r)
	}
	if got := strings.Join(r.Ceiling(), ","); got != "api.todo.example" {
		t.Fatalf("ceiling %q", got)
	}
}

// An unknown key at any depth refuses the whole requirement.
func TestUnknownKeysAtEveryDepth(t *testing.T) {
	for _, path := range []string{"appId", "provider.logo", "fields.0.secret", "registration.video", "request.bodyTemplate",
		"endpoints.extra", "testRequest.host", "lanHost.port"} {
		m := base()
		switch {
		case strings.HasPrefix(path, "endpoints"):
			m["endpoints"] = map[string]any{"tokenUrl": "https://auth.todo.example/token"}
		case strings.HasPrefix(path, "testRequest"):
			m["testRequest"] = map[string]any{"method": "GET", "pathAndQuery": "/me"}
		case strings.HasPrefix(path, "lanHost"):
			m["lanHost"] = map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge"}
			delete(m, "declaredApiHosts")
		}
		mustRefuse(t, path, set(m, path, "x"))
	}
	mustRefuse(t, "userLayer", set(base(), "userLayer", map[string]any{}))
	mustRefuse(t, "null member", set(base(), "scopes", json.RawMessage("null")))
}

func TestKindRules(t *testing.T) {
	none := base()
	none["kind"] = "none"
	delete(none, "fields")
	delete(none, "request")
	mustParse(t, none)
	mustRefuse(t, "none with fields", set(base(), "kind", "none"))
	n2 := base()
	n2["kind"] = "none"
	delete(n2, "fields")
	mustRefuse(t, "none with request", n2)
	n3 := base()
	n3["kind"] = "none"
	delete(n3, "fields")
	delete(n3, "request")
	delete(n3, "declaredApiHosts")
	mustRefuse(t, "none without hosts", n3)

	ld := base()
	ld["kind"] = "linked_device"
	mustParse(t, ld)
	mustRefuse(t, "linked_device with endpoints", set(ld, "endpoints", map[string]any{"tokenUrl": "https://a.example/t"}))
	mustRefuse(t, "unknown kind", set(base(), "kind", "cookie"))

	oauth := base()
	oauth["kind"] = "oauth2_auth_code"
	oauth["fields"] = []any{map[string]any{"key": "client_id", "label": "Client ID", "type": "text"}}
	delete(oauth, "request")
	oauth["endpoints"] = map[string]any{"authorizeUrl": "https://auth.todo.example/authorize", "tokenUrl": "https://auth.todo.example/token",
		"refreshUrl": "https://refresh.todo.example/token"}
	r := mustParse(t, oauth)
	if !r.UsesPKCE() {
		t.Error("pkce does not default to true")
	}
	if got := strings.Join(r.Ceiling(), ","); got != "api.todo.example,auth.todo.example,refresh.todo.example" {
		t.Errorf("the OAuth ceiling %q lacks the refresh host", got)
	}
}

// The provider name is printable ASCII: a Cyrillic ѕ (U+0455) is refused,
// an ASCII look-alike is not (and is not claimed to be).
func TestProviderNameGuard(t *testing.T) {
	mustRefuse(t, "cyrillic", set(base(), "provider.name", "\u0455potify"))
	mustRefuse(t, "zero width", set(base(), "provider.name", "Spo\u200btify"))
	mustRefuse(t, "bidi", set(base(), "provider.name", "Spotify\u202e"))
	mustRefuse(t, "fullwidth", set(base(), "provider.name", "Ｓpotify"))
	mustParse(t, set(base(), "provider.name", "5potify"))
}

// Every bound at its limit and one past it.
func TestBounds(t *testing.T) {
	repeat := func(n int, f func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	field := func(i int) any {
		return map[string]any{"key": fmt.Sprintf("f%d", i), "label": "L", "type": "text", "required": false}
	}
	host := func(i int) any { return fmt.Sprintf("h%d.todo.example", i) }
	tmpl := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("X-H%d", i)] = "{{api_key}}"
		}
		return m
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	longURL := func(n int) string { return "https://docs.todo.example/" + long(n-len("https://docs.todo.example/")) }
	longHost := func(n int) string {
		var labels []string
		for n > 0 {
			l := min(n, 63)
			if n-l == 1 {
				l--
			}
			labels = append(labels, long(l))
			n -= l + 1
		}
		return strings.Join(labels, ".")
	}
	if len(longHost(253)) != 253 || len(longHost(254)) != 254 || len(longURL(300)) != 300 {
		t.Fatal("the test's long values are not the lengths they claim")
	}
	cases := []struct {
		name     string
		path     string
		ok, over any
	}{
		{"fields", "fields", append([]any{map[string]any{"key": "api_key", "label": "K", "type": "secret"}}, repeat(7, field)...),
			append([]any{map[string]any{"key": "api_key", "label": "K", "type": "secret"}}, repeat(8, field)...)},
		{"hosts", "declaredApiHosts", repeat(32, host), repeat(33, host)},
		{"host chars", "declaredApiHosts", []any{longHost(253)}, []any{longHost(254)}},
		{"instructions", "registration.instructions", repeat(10, func(int) any { return "step" }), repeat(11, func(int) any { return "step" })},
		{"instruction chars", "registration.instructions", []any{long(300)}, []any{long(301)}},
		{"scopes", "scopes", repeat(64, func(int) any { return "read" }), repeat(65, func(int) any { return "read" })},
		{"scope chars", "scopes", []any{long(200)}, []any{long(201)}},
		{"header entries", "request.headerTemplate", tmpl(8), tmpl(9)},
		{"header value", "request.headerTemplate", map[string]any{"X-Api-Key": "{{api_key}}" + long(289)}, map[string]any{"X-Api-Key": "{{api_key}}" + long(290)}},
		{"header name", "request.headerTemplate", map[string]any{long(64): "{{api_key}}"}, map[string]any{long(65): "{{api_key}}"}},
		{"query name", "request.queryTemplate", map[string]any{"key[a]." + long(57): "{{api_key}}"}, map[string]any{"key[a]." + long(58): "{{api_key}}"}},
		{"provider name", "provider.name", long(120), long(121)},
		{"url", "provider.docsUrl", longURL(300), longURL(301)},
		{"label", "fields.0.label", long(80), long(81)},
		{"description", "fields.0.description", long(200), long(201)},
		{"placeholder", "fields.0.placeholder", long(60), long(61)},
		{"test path", "testRequest", map[string]any{"method": "GET", "pathAndQuery": "/" + long(199)}, map[string]any{"method": "GET", "pathAndQuery": "/" + long(200)}},
	}
	for _, c := range cases {
		if _, err := parse(t, set(base(), c.path, c.ok)); err != nil {
			t.Errorf("%s at its limit: %v", c.name, err)
		}
		mustRefuse(t, c.name+" past its limit", set(base(), c.path, c.over))
	}
	key40 := base()
	key40["fields"] = []any{map[string]any{"key": long(40), "label": "K", "type": "secret"}}
	key40["request"] = map[string]any{"headerTemplate": map[string]any{"X-Api-Key": "{{" + long(40) + "}}"}}
	mustParse(t, key40)
	set(key40, "fields.0.key", long(41))
	mustRefuse(t, "field key of 41", key40)
}

func TestCharsets(t *testing.T) {
	for _, bad := range []struct{ path, value string }{
		{"slot", "Todo"}, {"slot", "-todo"}, {"slot", "to do"}, {"slot", "todo:x"}, {"slot", strings.Repeat("a", 41)},
		{"fields.0.key", "API_KEY"}, {"fields.0.key", "api-key"}, {"fields.0.type", "file"},
		{"provider.docsUrl", "http://docs.todo.example"}, {"provider.docsUrl", "https://user:pw@docs.todo.example"},
		{"registration.consoleUrl", "javascript:alert(1)"}, {"provider.homepageUrl", "https://"},
	} {
		mustRefuse(t, bad.path+"="+bad.value, set(base(), bad.path, bad.value))
	}
	for _, h := range []string{"https://api.todo.example", "api.todo.example:443", "api.todo.example/v1", "user@api.todo.example",
		"localhost", "127.0.0.1", "a.localhost", "2130706433", "0x7f.1", "[::1]", "::1", "ex_ample.com", ""} {
		mustRefuse(t, "host "+h, set(base(), "declaredApiHosts", []any{h}))
	}
	// IDNA and case normalise; the canonical form keeps the normalised host.
	r := mustParse(t, set(base(), "declaredApiHosts", []any{"API.München.Example"}))
	if r.DeclaredAPIHosts[0] != "api.xn--mnchen-3ya.example" || !strings.Contains(r.Canonical(), "api.xn--mnchen-3ya.example") {
		t.Fatalf("%v %s", r.DeclaredAPIHosts, r.Canonical())
	}
}

// The host XOR of §12.10: exactly one source of hosts.
func TestLANHostXOR(t *testing.T) {
	lan := func(hosts any) map[string]any {
		m := base()
		m["lanHost"] = map[string]any{"class": "rfc1918-ipv4-literal", "label": "Hue bridge"}
		if hosts == nil {
			delete(m, "declaredApiHosts")
		} else {
			m["declaredApiHosts"] = hosts
		}
		return m
	}
	for _, c := range []struct {
		name string
		v    map[string]any
		ok   bool
	}{
		{"hosts, no lanHost", base(), true},
		{"no hosts, no lanHost", set(base(), "declaredApiHosts", nil), false},
		{"empty hosts, no lanHost", set(base(), "declaredApiHosts", []any{}), false},
		{"lanHost, no hosts", lan(nil), true},
		{"lanHost, its one address", lan([]any{"192.168.1.20"}), true},
		{"lanHost, 10/8", lan([]any{"10.1.2.3"}), true},
		{"lanHost, 172.31", lan([]any{"172.31.0.9"}), true},
		{"lanHost, 172.32", lan([]any{"172.32.0.9"}), false},
		{"lanHost, a name", lan([]any{"hue.example"}), false},
		{"lanHost, two", lan([]any{"192.168.1.20", "192.168.1.21"}), false},
		{"lanHost, empty", lan([]any{}), false},
		{"lanHost, loopback", lan([]any{"127.0.0.1"}), false},
	} {
		r, err := parse(t, c.v)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v", c.name, err)
		}
		if c.name == "lanHost, no hosts" && (r == nil || len(r.Ceiling()) != 0 || conn.HostsJSON(r.Ceiling()) != "[]") {
			t.Errorf("a LAN row before collection has ceiling %v", r.Ceiling())
		}
	}
}

// A credential-shaped value anywhere refuses; templates are judged without
// their placeholders.
func TestCredentialShapedValues(t *testing.T) {
	for _, c := range []struct{ path, value string }{
		{"fields.0.placeholder", "Bearer abcdef"},
		{"fields.0.description", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
		{"registration.instructions", "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq2LmPq8"},
		{"request.headerTemplate.X-Api-Key", "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq2LmPq8"},
		{"request.headerTemplate.Authorization", "Bearer sk_live_4eC39HqLyjWDarjtT1zdp7dc"},
		{"provider.docsUrl", "https://docs.todo.example/?key=sk_live_4eC39HqLyjWDarjtT1zdp7dcXq2LmPq8"},
	} {
		m := base()
		if c.path == "registration.instructions" {
			m = set(m, c.path, []any{c.value})
		} else {
			m = set(m, c.path, c.value)
		}
		mustRefuse(t, c.path, m)
	}
	ok := set(base(), "request.headerTemplate.Authorization", "Bearer {{api_key}}")
	mustParse(t, ok)
	mustParse(t, set(base(), "provider.docsUrl", "https://developer.Todo.example/v2/Docs/Getting-Started-2024"))
	mustParse(t, set(base(), "fields.0.placeholder", "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"))
}

// Canonical form: key order is ignored, array order is significant.
func TestCanonical(t *testing.T) {
	a := mustParse(t, base())
	b, err := conn.Parse([]byte(`{"declaredApiHosts":["api.todo.example"],"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},
		"registration":{"instructions":["Open the console.","Create a key named Snug."],"consoleUrl":"https://console.todo.example/keys"},
		"fields":[{"type":"secret","label":"API key","key":"api_key"}],"kind":"api_key",
		"provider":{"docsUrl":"https://docs.todo.example/api","name":"Todo Cloud"},"slot":"todo"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Canonical() != b.Canonical() {
		t.Fatalf("key order changed the canonical form:\n%s\n%s", a.Canonical(), b.Canonical())
	}
	swapped := base()
	swapped["registration"].(map[string]any)["instructions"] = []any{"Create a key named Snug.", "Open the console."}
	if c := mustParse(t, swapped); c.Canonical() == a.Canonical() {
		t.Fatal("reordered steps kept the canonical form")
	}
	want := `{"declaredApiHosts":["api.todo.example"],"fields":[{"key":"api_key","label":"API key","type":"secret"}],"kind":"api_key",` +
		`"provider":{"docsUrl":"https://docs.todo.example/api","name":"Todo Cloud"},"registration":{"consoleUrl":"https://console.todo.example/keys",` +
		`"instructions":["Open the console.","Create a key named Snug."]},"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"slot":"todo"}`
	if a.Canonical() != want {
		t.Fatalf("canonical\n%s\nwant\n%s", a.Canonical(), want)
	}
	// JSON.stringify's escaping: no HTML escapes, U+2028 as is.
	if got, _ := conn.Canonical([]byte(`{"b":"<a>&\u2028\"\n","a":[2,1]}`)); got != "{\"a\":[2,1],\"b\":\"<a>&\u2028\\\"\\n\"}" {
		t.Fatalf("canonical %q", got)
	}
}

func TestDiff(t *testing.T) {
	a := mustParse(t, base())
	next := base()
	next["declaredApiHosts"] = []any{"api.todo.example", "evil.example"}
	set(next, "fields.0.label", "Key")
	b := mustParse(t, next)
	got := conn.Diff(a, b)
	want := []conn.Change{{Path: "declaredApiHosts[1]", New: `"evil.example"`}, {Path: "fields[0].label", Old: `"API key"`, New: `"Key"`}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("diff %v", got)
	}
	if len(conn.Diff(a, a)) != 0 {
		t.Fatal("a requirement differs from itself")
	}
}

func TestConnectionURL(t *testing.T) {
	for in, want := range map[string]struct {
		ok, malformed bool
		slot, path    string
	}{
		"snug-connection://files/v1.0/me/drive":  {true, false, "files", "/v1.0/me/drive"},
		"SNUG-CONNECTION://files/a?b=c":          {true, false, "files", "/a?b=c"},
		"https://api.example.com/x":              {false, false, "", ""},
		"snug-connection:files/x":                {false, true, "", ""},
		"snug-connection://files":                {false, true, "", ""},
		"snug-connection://HUE/x":                {false, true, "", ""},
		"snug-connection://files//evil.example/": {false, true, "", ""},
		"snug-connection://files/a\\b":           {false, true, "", ""},
		"snug-connection://files/a#frag":         {false, true, "", ""},
		"snug-connection://us@er/x":              {false, true, "", ""},
		"snug-connection://:443/x":               {false, true, "", ""},
	} {
		u, ok, malformed := conn.ParseConnectionURL(in)
		if ok != want.ok || malformed != want.malformed || u.Slot != want.slot || u.PathAndQuery != want.path {
			t.Errorf("%q: %+v %v %v", in, u, ok, malformed)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(encode(f, base()))
	f.Add([]byte(`{"slot":"a","provider":{"name":"A"},"kind":"none","declaredApiHosts":["a.example"]}`))
	f.Add([]byte(`{"slot":"x","kind":"basic_auth","fields":[{"key":"u","label":"U","type":"text"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := conn.Parse(data)
		if err != nil {
			if !errors.Is(err, conn.ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		// The canonical form parses back to itself, and its ceiling is
		// sorted, unique and never holds this machine.
		again, err := conn.ParseString(r.Canonical())
		if err != nil || again.Canonical() != r.Canonical() {
			t.Fatalf("canonical %s does not parse back (%v)", r.Canonical(), err)
		}
		hosts := r.Ceiling()
		for i := 1; i < len(hosts); i++ {
			if hosts[i-1] >= hosts[i] {
				t.Fatalf("ceiling %v not sorted and unique", hosts)
			}
		}
	})
}

// FuzzParseConnectionURL: a snug-connection address either is not one,
// is malformed, or gives a valid slot and a path on that slot's host.
func FuzzParseConnectionURL(f *testing.F) {
	for _, s := range []string{"snug-connection://files/v1.0/me/drive", "SNUG-CONNECTION://a/", "snug-connection://HUE/x",
		"snug-connection://a//evil.example/", "snug-connection://a/x#f", "snug-connection://a", "https://a.example/", "snug-connection:a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, ok, malformed := conn.ParseConnectionURL(s)
		if ok && malformed {
			t.Fatal("both ok and malformed")
		}
		if !ok {
			return
		}
		if !conn.ValidSlot(u.Slot) || !strings.HasPrefix(u.PathAndQuery, "/") || strings.HasPrefix(u.PathAndQuery, "//") ||
			strings.ContainsAny(u.PathAndQuery, `\#`) || !strings.HasSuffix(s, u.Slot+u.PathAndQuery) {
			t.Fatalf("%q gave %+v", s, u)
		}
	})
}

// An imported row's requirement is checked strictly, against its slot, and
// its ceiling recomputed in the stored form.
func TestCheckImported(t *testing.T) {
	text := `{"slot":"cal","provider":{"name":"Cal"},"kind":"api_key","fields":[{"key":"api_key","label":"Key","type":"secret"}],
		"declaredApiHosts":["b.example","A.example","a.example"]}`
	if hosts, err := conn.CheckImported("cal", text); err != nil || hosts != `["a.example","b.example"]` {
		t.Fatalf("%s %v", hosts, err)
	}
	for _, c := range []struct{ slot, text string }{
		{"other", text},
		{"cal", strings.Replace(text, `"kind"`, `"extra":1,"kind"`, 1)},
		{"cal", `{}`},
	} {
		if _, err := conn.CheckImported(c.slot, c.text); !errors.Is(err, conn.ErrInvalid) {
			t.Errorf("%s %s: %v", c.slot, c.text, err)
		}
	}
}
