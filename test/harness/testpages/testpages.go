// Package testpages serves the small, deterministic HTML pages that the
// real-browser tests drive: a form, a click counter, an occluded button, a key
// log, checkboxes, switches and radios, text fields of every kind with a
// select, scrollers and a wheel pad, a big page for bounded reads, links
// across origins, frames of every origin relation for screenshots, controls
// drawn the ways applications draw them (pseudo-elements, styled labels,
// shadow DOM) and covered the ways pages cover them, gestures (double-click,
// hover, drag, a click at a point, key chords), elements clickable only by
// the page's own doing, and about:blank and srcdoc frames.
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
	}
	bigPage = template.Must(template.ParseFS(pagesFS, "pages/big.html"))
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
	bigHTML = renderBig()
)

// Paths lists the paths of the pages, in a stable order.
func Paths() []string {
	return []string{"/", "/form", "/counter", "/occluded", "/keys", "/swatch", "/controls", "/fields", "/scroll",
		"/big", "/nav", "/frames", "/nested", "/moving", "/effects", "/xhtml",
		"/actionable", "/gestures", "/clickables", "/blankframes"}
}

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
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		writeHTML(w, bigHTML)
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
