// Package testpages serves the small, deterministic HTML pages that the
// real-browser tests drive: a form, a click counter, an occluded button, a key
// log, checkboxes, switches and radios, text fields of every kind with a
// select, scrollers and a wheel pad, a big page for bounded reads, links
// across origins, frames of every origin relation for screenshots, controls
// drawn the ways applications draw them (pseudo-elements, styled labels,
// shadow DOM) and covered the ways pages cover them, gestures (double-click,
// hover, drag, a click at a point, key chords), elements clickable only by
// the page's own doing, about:blank and srcdoc frames, and a page whose
// router adds "#/" to its URL (/router); /moved redirects to /counter.
//
// Serve starts two servers on 127.0.0.1, each on its own port, so a test has
// two origins. The page of one server can link to the other. A URL with the
// host name localhost (LocalhostURL) reaches the same server as another origin
// and another site.
package testpages

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

//go:embed pages/*.html pages/*.xhtml
var pagesFS embed.FS

// The pages served at each path, from pages/<name>.html. The big page and
// the pages that refer to the other origin are templates.
var (
	static = map[string]string{
		"/":         "index.html",
		"/form":     "form.html",
		"/counter":  "counter.html",
		"/occluded": "occluded.html",
		"/keys":     "keys.html",
		"/swatch":   "swatch.html",
		"/controls": "controls.html",
		"/fields":   "fields.html",
		"/scroll":   "scroll.html",
		// Issue 12: what a person can click, and how.
		"/actionable":  "actionable.html",
		"/gestures":    "gestures.html",
		"/clickables":  "clickables.html",
		"/blankframes": "blankframes.html",
		"/router":      "router.html",
	}
	bigPage     = template.Must(template.ParseFS(pagesFS, "pages/big.html"))
	swaggerPage = template.Must(template.ParseFS(pagesFS, "pages/swagger.html"))
	rowsPage    = template.Must(template.ParseFS(pagesFS, "pages/rows.html"))
	// Pages that refer to the other origin and the other site.
	crossPages = map[string]*template.Template{
		"/nav":     template.Must(template.ParseFS(pagesFS, "pages/nav.html")),
		"/frames":  template.Must(template.ParseFS(pagesFS, "pages/frames.html")),
		"/nested":  template.Must(template.ParseFS(pagesFS, "pages/nested.html")),
		"/moving":  template.Must(template.ParseFS(pagesFS, "pages/moving.html")),
		"/effects": template.Must(template.ParseFS(pagesFS, "pages/effects.html")),
		// Served as application/xhtml+xml: an XML document, whose elements
		// Chromium names in lower case.
		"/xhtml": template.Must(template.ParseFS(pagesFS, "pages/xhtml.xhtml")),
	}
	bigHTML     = renderBig()
	swaggerHTML = renderSwagger()
)

// Paths lists the paths of the pages, in a stable order.
func Paths() []string {
	return []string{"/", "/form", "/counter", "/occluded", "/keys", "/swatch", "/controls", "/fields", "/scroll",
		"/big", "/swagger", "/rows", "/nav", "/frames", "/nested", "/moving", "/effects", "/xhtml",
		"/actionable", "/gestures", "/clickables", "/blankframes", "/router"}
}

// MaxRows is the most rows /rows?n= serves (n is 1 to MaxRows; 100 when
// absent).
const MaxRows = 5000

// Counts of the elements on /big.
const (
	BigItems      = 999  // buttons "Item 1" to "Item 999", then the button "Target"
	BigParagraphs = 1000 // paragraphs "Paragraph 1: …" to "Paragraph 1000: …"
)

// Server is one origin serving the pages.
type Server struct {
	srv   *httptest.Server
	other *Server
}

// Serve starts two servers on 127.0.0.1, on two ports, and returns the first.
// Other returns the second. Both stop when the test ends.
func Serve(t testing.TB) *Server {
	t.Helper()
	a, b := &Server{}, &Server{}
	a.other, b.other = b, a
	for _, s := range []*Server{a, b} {
		s.srv = httptest.NewServer(s.handler())
		t.Cleanup(s.srv.Close)
	}
	return a
}

// Other returns the server of the other origin. Its Other is s.
func (s *Server) Other() *Server { return s.other }

// Origin returns "http://127.0.0.1:<port>".
func (s *Server) Origin() string { return s.srv.URL }

// URL returns the address of path on this origin, for example
// s.URL("/form") is "http://127.0.0.1:<port>/form".
func (s *Server) URL(path string) string { return s.srv.URL + path }

// LocalhostURL returns the address of path on this server with the host name
// localhost. That is another origin and another site than URL(path), although
// the same server answers.
func (s *Server) LocalhostURL(path string) string {
	return "http://localhost:" + strconv.Itoa(s.Port()) + path
}

// Port returns the TCP port of the server.
func (s *Server) Port() int {
	u, err := url.Parse(s.srv.URL)
	if err != nil {
		panic(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		panic(err)
	}
	return p
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	for path, name := range static {
		data, err := pagesFS.ReadFile("pages/" + name)
		if err != nil {
			panic(err)
		}
		pattern := "GET " + path
		if path == "/" {
			pattern += "{$}" // only "/" itself, not every path
		}
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			writeHTML(w, data)
		})
	}
	// /moved is no page: the server redirects it to /counter.
	mux.HandleFunc("GET /moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/counter", http.StatusFound)
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		writeHTML(w, bigHTML)
	})
	mux.HandleFunc("GET /swagger", func(w http.ResponseWriter, r *http.Request) {
		writeHTML(w, swaggerHTML)
	})
	mux.HandleFunc("GET /rows", func(w http.ResponseWriter, r *http.Request) {
		n := 100
		if q := r.URL.Query().Get("n"); q != "" {
			v, err := strconv.Atoi(q)
			if err != nil || v < 1 || v > MaxRows {
				http.Error(w, fmt.Sprintf("n must be 1 to %d", MaxRows), http.StatusBadRequest)
				return
			}
			n = v
		}
		writeHTML(w, renderRows(n))
	})
	for path, page := range crossPages {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			var buf bytes.Buffer
			err := page.Execute(&buf, map[string]string{
				"OtherOrigin": s.other.Origin(),
				"OtherSite":   "http://localhost:" + strconv.Itoa(s.other.Port()),
			})
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			if strings.HasSuffix(page.Name(), ".xhtml") {
				w.Header().Set("Content-Type", "application/xhtml+xml; charset=utf-8")
				w.Write(buf.Bytes())
				return
			}
			writeHTML(w, buf.Bytes())
		})
	}
	return mux
}

func writeHTML(w http.ResponseWriter, data []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Every load reads the page again, so a reload starts from a known state.
	h.Set("Cache-Control", "no-store")
	w.Write(data)
}

func renderBig() []byte {
	type group struct {
		N    int
		Rows [][]int
	}
	var groups []group
	for first := 1; first <= BigItems; first += 100 {
		g := group{N: len(groups) + 1}
		for row := first; row < first+100 && row <= BigItems; row += 10 {
			var items []int
			for i := row; i < row+10 && i <= BigItems; i++ {
				items = append(items, i)
			}
			g.Rows = append(g.Rows, items)
		}
		groups = append(groups, g)
	}
	paragraphs := make([]int, BigParagraphs)
	for i := range paragraphs {
		paragraphs[i] = i + 1
	}
	var buf bytes.Buffer
	if err := bigPage.Execute(&buf, map[string]any{"Groups": groups, "Paragraphs": paragraphs}); err != nil {
		panic(fmt.Sprintf("big page: %v", err))
	}
	return buf.Bytes()
}

// renderSwagger renders /swagger: the petstore's tags, operations and
// schemas in the shape Swagger UI gives them.
func renderSwagger() []byte {
	type op struct {
		Method, Upper, Path, Summary, Tag, ID string
		Locked                                bool
	}
	type tag struct {
		Name, Description string
		Ops               []op
	}
	type field struct{ Name, Type string }
	type model struct {
		Name   string
		Fields []field
	}
	ops := func(name string, list ...[3]string) []op {
		var out []op
		for _, o := range list {
			out = append(out, op{Method: o[0], Path: o[1], Summary: o[2], Tag: name, ID: name + "-" + o[0] + strings.ReplaceAll(o[1], "/", "-"), Locked: name != "user"})
		}
		return out
	}
	tags := []tag{
		{"pet", "Everything about your Pets", ops("pet",
			[3]string{"put", "/pet", "Update an existing pet."}, [3]string{"post", "/pet", "Add a new pet to the store."},
			[3]string{"get", "/pet/findByStatus", "Finds Pets by status."}, [3]string{"get", "/pet/findByTags", "Finds Pets by tags."},
			[3]string{"get", "/pet/{petId}", "Find pet by ID."}, [3]string{"post", "/pet/{petId}", "Updates a pet in the store with form data."},
			[3]string{"delete", "/pet/{petId}", "Deletes a pet."}, [3]string{"post", "/pet/{petId}/uploadImage", "Uploads an image."})},
		{"store", "Access to Petstore orders", ops("store",
			[3]string{"get", "/store/inventory", "Returns pet inventories by status."}, [3]string{"post", "/store/order", "Place an order for a pet."},
			[3]string{"get", "/store/order/{orderId}", "Find purchase order by ID."}, [3]string{"delete", "/store/order/{orderId}", "Delete purchase order by identifier."})},
		{"user", "Operations about user", ops("user",
			[3]string{"post", "/user", "Create user."}, [3]string{"post", "/user/createWithList", "Creates list of users with given input array."},
			[3]string{"get", "/user/login", "Logs user into the system."}, [3]string{"get", "/user/logout", "Logs out current logged in user session."},
			[3]string{"get", "/user/{username}", "Get user by user name."}, [3]string{"put", "/user/{username}", "Update user resource."},
			[3]string{"delete", "/user/{username}", "Delete user resource."})},
	}
	models := []model{
		{"Order", []field{{"id", "integer($int64)"}, {"petId", "integer($int64)"}, {"quantity", "integer($int32)"}, {"shipDate", "string($date-time)"}, {"status", "string"}, {"complete", "boolean"}}},
		{"Category", []field{{"id", "integer($int64)"}, {"name", "string"}}},
		{"User", []field{{"id", "integer($int64)"}, {"username", "string"}, {"firstName", "string"}, {"lastName", "string"}, {"email", "string"}, {"password", "string"}, {"phone", "string"}, {"userStatus", "integer($int32)"}}},
		{"Tag", []field{{"id", "integer($int64)"}, {"name", "string"}}},
		{"Pet", []field{{"id", "integer($int64)"}, {"name*", "string"}, {"category", "Category"}, {"photoUrls*", "[string]"}, {"tags", "[Tag]"}, {"status", "string"}}},
		{"ApiResponse", []field{{"code", "integer($int32)"}, {"type", "string"}, {"message", "string"}}},
	}
	for i := range tags {
		for j := range tags[i].Ops {
			tags[i].Ops[j].Upper = strings.ToUpper(tags[i].Ops[j].Method)
		}
	}
	var buf bytes.Buffer
	if err := swaggerPage.Execute(&buf, map[string]any{"Tags": tags, "Models": models}); err != nil {
		panic(fmt.Sprintf("swagger page: %v", err))
	}
	return buf.Bytes()
}

// renderRows renders /rows with n rows.
func renderRows(n int) []byte {
	type row struct {
		N            int
		Field, Check bool
	}
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{N: i + 1, Field: (i+1)%5 == 0, Check: (i+1)%7 == 0}
	}
	var buf bytes.Buffer
	if err := rowsPage.Execute(&buf, rows); err != nil {
		panic(fmt.Sprintf("rows page: %v", err))
	}
	return buf.Bytes()
}

// Page returns the HTML of a static page by path ("/form", …), for programs
// such as the demo that serve a page without a test.
func Page(path string) ([]byte, bool) {
	name, ok := static[path]
	if !ok {
		return nil, false
	}
	data, err := pagesFS.ReadFile("pages/" + name)
	return data, err == nil
}
