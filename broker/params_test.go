package broker

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

// tabsCheck is the params check of browser.tabs: two strings of 1 to 256
// characters, nothing else.
func tabsCheck(t testing.TB) *paramsCheck {
	t.Helper()
	c, err := compileParams(browser.MethodTabs, browser.ParamsSchema(browser.TabsParams{}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// libraryVerdict is the schema library's own answer, without the memory.
func libraryVerdict(c *paramsCheck, params []byte) error {
	doc, err := wire.DecodeValue(params)
	if err != nil {
		return err
	}
	return c.schema.Validate(doc)
}

func tabsParams(session string) []byte {
	return []byte(`{"sessionId":` + strconv.Quote(session) + `,"instanceId":"inst"}`)
}

func TestParamsCheckRemembersOnlyAccepted(t *testing.T) {
	c := tabsCheck(t)
	ok := tabsParams("s")
	for range 2 {
		if err := c.check(ok); err != nil {
			t.Fatalf("check(%s) = %v, want nil", ok, err)
		}
	}
	if _, known := c.accepted[string(ok)]; !known {
		t.Errorf("accepted params not remembered")
	}
	for _, bad := range []string{
		`{"sessionId":"s"}`,
		`{"sessionId":"s","instanceId":"inst","tabId":"t"}`,
		`{"sessionId":"","instanceId":"inst"}`,
		`{"SessionId":"s","instanceId":"inst"}`,
		`{"sessionId":1,"instanceId":"inst"}`,
		`null`,
		`{}`,
		`{`,
	} {
		for range 2 { // a refusal is not remembered: refused again
			if err := c.check([]byte(bad)); err == nil {
				t.Errorf("check(%s) = nil, want an error", bad)
			}
		}
		if _, known := c.accepted[bad]; known {
			t.Errorf("refused params %s remembered", bad)
		}
	}
}

func TestParamsCheckRemembersUpToMaxRememberedParams(t *testing.T) {
	c := tabsCheck(t)
	// JSON white space pads the text: the strings have at most 256 characters.
	padded := func(n int) []byte {
		p := tabsParams("s")
		return append(p[:1:1], append([]byte(strings.Repeat(" ", n-len(p))), p[1:]...)...)
	}
	atLimit, pastLimit := padded(maxRememberedParams), padded(maxRememberedParams+1)
	if len(atLimit) != maxRememberedParams || len(pastLimit) != maxRememberedParams+1 {
		t.Fatalf("lengths %d and %d", len(atLimit), len(pastLimit))
	}
	for _, p := range [][]byte{atLimit, pastLimit} {
		if err := c.check(p); err != nil {
			t.Fatalf("check of %d bytes: %v", len(p), err)
		}
	}
	if _, known := c.accepted[string(atLimit)]; !known {
		t.Errorf("params of %d bytes not remembered", len(atLimit))
	}
	if _, known := c.accepted[string(pastLimit)]; known {
		t.Errorf("params of %d bytes remembered", len(pastLimit))
	}
}

func TestParamsCheckForgetsWhenFull(t *testing.T) {
	c := tabsCheck(t)
	for i := range maxRememberedTexts {
		if err := c.check(tabsParams(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.accepted) != maxRememberedTexts {
		t.Fatalf("remembered %d texts, want %d", len(c.accepted), maxRememberedTexts)
	}
	last := tabsParams("one more")
	if err := c.check(last); err != nil {
		t.Fatal(err)
	}
	if len(c.accepted) != 1 {
		t.Errorf("remembered %d texts past the limit, want 1 (the rest forgotten)", len(c.accepted))
	}
	if _, known := c.accepted[string(last)]; !known {
		t.Errorf("the text past the limit is not remembered")
	}
}

// FuzzParamsCheck holds the remembering check to the schema library: the
// same verdict on the first check of a text and on the second, which may
// come from memory.
func FuzzParamsCheck(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","instanceId":"inst"}`,
		`{"sessionId":"s","instanceId":"inst","x":1}`,
		`{"sessionId":"\u00e9","instanceId":"i"}`,
		`{"instanceId":"i","sessionId":"s"}`,
		`{"sessionId":"s","sessionId":"","instanceId":"i"}`,
		` {"sessionId":"s","instanceId":"i"} `,
		`{}`, `null`, `[]`, `"s"`, ``,
	} {
		f.Add([]byte(s))
	}
	c := tabsCheck(f)
	f.Fuzz(func(t *testing.T, params []byte) {
		want := libraryVerdict(c, params) == nil
		for i := range 2 {
			if got := c.check(json.RawMessage(params)) == nil; got != want {
				t.Fatalf("check %d of %q: accepted %v, the library %v", i+1, params, got, want)
			}
		}
	})
}
