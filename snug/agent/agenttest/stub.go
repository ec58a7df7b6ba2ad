// Package agenttest is a stand-in for the user's agent in tests: a real
// OpenAI-compatible chat-completions server on loopback that streams the
// replies a test scripts and records what it was sent.
package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	// Status, when not 0 or 200, is answered with no body.
	Status int
	// Chunks are streamed one event each; Text is cut into Chunks of
	// about 8 bytes when Chunks is nil.
	Text   string
	Chunks []string
	// Gap is the pause before each chunk.
	Gap time.Duration
	// Hold keeps the stream open after the last chunk until the client
	// leaves (a reply that never ends), instead of sending [DONE].
	Hold bool
	// Plain answers one JSON document instead of an event stream.
	Plain bool
}

// Request is what the server was sent.
type Request struct {
	Authorization string
	Model         string
	System, User  string
	MaxTokens     int
	Stream        bool
}

// Server is a running stub. Replies are used in order; the last one
// repeats.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	replies  []Reply
	requests []Request
	gone     int // requests whose client left before the reply ended
}

// New starts a stub on 127.0.0.1 answering replies in order.
func New(replies ...Reply) *Server {
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Script replaces the replies still to come.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	s.replies = replies
	s.mu.Unlock()
}

// Requests returns what the server was sent, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Abandoned counts the requests whose client went away before the reply
// ended (a cancelled turn).
func (s *Server) Abandoned() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone
}

// BaseURL is the API base (…/v1) to configure.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Stream    bool `json:"stream"`
		MaxTokens int  `json:"max_tokens"`
	}
	data, _ := io.ReadAll(r.Body)
	json.Unmarshal(data, &body)
	req := Request{Authorization: r.Header.Get("Authorization"), Model: body.Model, Stream: body.Stream, MaxTokens: body.MaxTokens}
	for _, m := range body.Messages {
		switch m.Role {
		case "system":
			req.System = m.Content
		case "user":
			req.User = m.Content
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var rep Reply
	if len(s.replies) > 0 {
		rep = s.replies[0]
		if len(s.replies) > 1 {
			s.replies = s.replies[1:]
		}
	}
	s.mu.Unlock()

	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.WriteHeader(rep.Status)
		return
	}
	if rep.Plain {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": rep.Text}}}})
		return
	}
	chunks := rep.Chunks
	if chunks == nil {
		for t := rep.Text; t != ""; {
			n := min(8, len(t))
			for n < len(t) && !utf8Start(t[n]) {
				n++
			}
			chunks, t = append(chunks, t[:n]), t[n:]
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	for _, c := range chunks {
		select {
		case <-time.After(rep.Gap):
		case <-r.Context().Done():
			s.abandoned()
			return
		}
		ev, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]string{"content": c}}}})
		if _, err := fmt.Fprintf(w, "data: %s\n\n", ev); err != nil {
			s.abandoned()
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if rep.Hold {
		<-r.Context().Done()
		s.abandoned()
		return
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func (s *Server) abandoned() {
	s.mu.Lock()
	s.gone++
	s.mu.Unlock()
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
