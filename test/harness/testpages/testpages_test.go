package testpages_test

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/test/harness/testpages"
)

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestPages(t *testing.T) {
	t.Parallel()
	s := testpages.Serve(t)
	tests := []struct {
		path string
		want []string
	}{
		{"/", []string{`href="/form"`}}, // the index
		{"/form", []string{"<h1>DSH demo</h1>", `<label for="name">Your name</label>`, ">Greet</button>", `role="status"`, `type="checkbox"`, "<a "}},
		{"/counter", []string{">Add one</button>", "Clicks: 0", "window.clicks"}},
		{"/occluded", []string{">Hidden target</button>", `id="overlay"`, ">Visible</button>"}},
		{"/keys", []string{`<label for="entry">Type here</label>`, "Submitted: ", `id="log"`}},
		{"/swatch", []string{"background:#0000ff"}},
		{"/controls", []string{`id="news" type="checkbox"`, `role="switch"`, `type="radio"`, `role="radio"`, "window.clicks"}},
		{"/fields", []string{`type="password"`, `maxlength="5"`, "<select", `contenteditable="true"`, "readonly", "window.inputs"}},
		{"/scroll", []string{`id="box"`, `id="wheel"`, "window.wheels", "The bottom"}},
		{"/big", []string{">Item 1</button>", ">Item 999</button>", ">Target</button>", "Paragraph 1000:"}},
		{"/swagger", []string{"Swagger Petstore", `aria-label="get /pet/findByStatus"`, ">Authorize<", `id="model-ApiResponse"`, "window.opened"}},
		{"/rows", []string{"<h1>100 rows</h1>", ">Button 1</button>", ">Button 100</button>", `<input type="checkbox"> Check 98`}},
		// {other} and {other-site} stand for the other server's origins.
		{"/nav", []string{`href="{other}/form"`, `href="{other-site}/form"`, `href="/counter"`}},
		{"/frames", []string{`src="/swatch"`, `src="{other}/swatch"`, `src="{other-site}/swatch"`, `src="/nested"`, "sandbox srcdoc=", "mode: 'closed'"}},
		{"/nested", []string{`src="{other}/swatch"`, "Nested page", ">Nested button</button>"}},
		{"/moving", []string{`id="slide"`, `id="glide"`, `src="{other}/swatch"`}},
		{"/effects", []string{"filter:blur(6px)", `src="{other}/swatch"`}},
		{"/xhtml", []string{`xmlns="http://www.w3.org/1999/xhtml"`, `src="{other-site}/swatch"`}},
		{"/actionable", []string{`.pseudo::before`, `aria-label="Remember me"`, `for="walk"`, "attachShadow", `role="dialog"`, `id="over"`}},
		{"/gestures", []string{"dblclick", "mouseenter", `id="sortable"`, `id="board"`, `id="chart"`, `draggable="true"`, `id="editor"`, `value="m"`}},
		{"/clickables", []string{`id="day5"`, "cursor:pointer", `tabindex="0"`, `title="Code view"`, "cursor:grab", `id="wrap"`, `id="todo"`, "pointerdown", `id="sortable"`, `aria-hidden="true"`}},
		{"/blankframes", []string{`id="blank"`, "srcdoc=", `sandbox="allow-scripts"`, "contentDocument"}},
		{"/router", []string{"location.replace('#/')", `id="route"`}},
	}
	if len(tests) != len(testpages.Paths()) {
		t.Fatalf("the test covers %d pages, Paths lists %d", len(tests), len(testpages.Paths()))
	}
	for _, tc := range tests {
		name := strings.TrimPrefix(tc.path, "/")
		if name == "" {
			name = "index"
		}
		t.Run(name, func(t *testing.T) {
			for _, srv := range []*testpages.Server{s, s.Other()} {
				u := srv.URL(tc.path)
				resp, body := get(t, u)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s: %s", u, resp.Status)
				}
				want := "text/html; charset=utf-8"
				if tc.path == "/xhtml" {
					want = "application/xhtml+xml; charset=utf-8"
				}
				if ct := resp.Header.Get("Content-Type"); ct != want {
					t.Errorf("GET %s: Content-Type %q", u, ct)
				}
				for _, w := range tc.want {
					w = strings.NewReplacer(
						"{other}", srv.Other().Origin(),
						"{other-site}", strings.TrimSuffix(srv.Other().LocalhostURL(""), "/"),
					).Replace(w)
					if !strings.Contains(body, w) {
						t.Errorf("GET %s: body lacks %q", u, w)
					}
				}
				if strings.Contains(body, "http://") && !slices.Contains([]string{"/nav", "/frames", "/nested", "/moving", "/effects", "/xhtml"}, tc.path) {
					t.Errorf("GET %s: the page refers to an external resource", u)
				}
			}
		})
	}
}

func TestOrigins(t *testing.T) {
	t.Parallel()
	s := testpages.Serve(t)
	if s.Origin() == s.Other().Origin() {
		t.Fatalf("both servers have the origin %s", s.Origin())
	}
	if s.Other().Other() != s {
		t.Error("Other is not symmetric")
	}
	if !strings.HasPrefix(s.URL("/form"), "http://127.0.0.1:") {
		t.Errorf("URL = %s", s.URL("/form"))
	}
	if !strings.HasPrefix(s.LocalhostURL("/form"), "http://localhost:") {
		t.Errorf("LocalhostURL = %s", s.LocalhostURL("/form"))
	}
	resp, _ := get(t, s.URL("/nav"))
	resp.Body.Close()
	// The nav page of each origin links to the other.
	_, body := get(t, s.Other().URL("/nav"))
	if !strings.Contains(body, `href="`+s.URL("/form")+`"`) {
		t.Errorf("the other origin's nav page does not link back:\n%s", body)
	}
}

func TestBigCounts(t *testing.T) {
	t.Parallel()
	s := testpages.Serve(t)
	_, body := get(t, s.URL("/big"))
	if n := strings.Count(body, "<button "); n != testpages.BigItems+1 {
		t.Errorf("%d buttons, want %d", n, testpages.BigItems+1)
	}
	if n := strings.Count(body, "<p>"); n != testpages.BigParagraphs {
		t.Errorf("%d paragraphs, want %d", n, testpages.BigParagraphs)
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	s := testpages.Serve(t)
	for _, p := range []string{"/nope", "/form/x"} {
		resp, _ := get(t, s.URL(p))
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404", p, resp.Status)
		}
	}
}

// TestMoved: /moved redirects to /counter.
func TestMoved(t *testing.T) {
	t.Parallel()
	s := testpages.Serve(t)
	resp, body := get(t, s.URL("/moved"))
	if resp.Request.URL.String() != s.URL("/counter") || !strings.Contains(body, "<title>Counter</title>") {
		t.Fatalf("GET /moved ended at %s", resp.Request.URL)
	}
}

// TestRowsCount: /rows serves n rows for n from 1 to MaxRows, and refuses
// n outside that range.
func TestRowsCount(t *testing.T) {
	t.Parallel()
	s := testpages.Serve(t)
	for _, tc := range []struct {
		n      string
		status int
		want   string
	}{
		{"1", http.StatusOK, ">Button 1</button>"},
		{strconv.Itoa(testpages.MaxRows), http.StatusOK, ">Button " + strconv.Itoa(testpages.MaxRows) + "</button>"},
		{strconv.Itoa(testpages.MaxRows + 1), http.StatusBadRequest, ""},
		{"0", http.StatusBadRequest, ""},
		{"x", http.StatusBadRequest, ""},
	} {
		resp, body := get(t, s.URL("/rows?n="+tc.n))
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("n=%s: %s, body has %q: %v", tc.n, resp.Status, tc.want, strings.Contains(body, tc.want))
		}
		if tc.status == http.StatusOK && strings.Count(body, `<div class="row">`) != atoi(t, tc.n) {
			t.Errorf("n=%s: %d rows", tc.n, strings.Count(body, `<div class="row">`))
		}
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
