package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// MaxReplyBytes bounds a reply's text: far past what an app-response frame
// carries (256 KiB), so a runaway endpoint cannot grow the broker.
const MaxReplyBytes = 1 << 20

// maxBodyBytes bounds what is read of a response body (SSE framing and
// JSON around the text included).
const maxBodyBytes = 4 * MaxReplyBytes

// OpenAI is an OpenAI-compatible chat-completions endpoint.
type OpenAI struct {
	// URL is the chat-completions URL (see [CheckEndpoint]).
	URL   string
	Model string
	// Key, when not empty, is sent as a bearer token.
	Key string
	// Client is the HTTP client; nil uses [NewHTTPClient].
	Client *http.Client
}

// NewHTTPClient is the default client for agent endpoints: it follows no
// redirect (the key would go with it), and waits at most a minute for the
// response headers; the turn's context bounds the rest.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	t.Proxy = nil // a local model is never reached through a proxy
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model     string        `json:"model,omitempty"`
	Messages  []chatMessage `json:"messages"`
	Stream    bool          `json:"stream"`
	MaxTokens int           `json:"max_tokens,omitempty"`
}

// chunk is a streamed event, or (with Message) a whole answer.
type chunk struct {
	Choices []struct {
		Delta   struct{ Content string } `json:"delta"`
		Message struct{ Content string } `json:"message"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// Answer sends the turn with streaming on and reads the reply as
// server-sent events; an endpoint that answers with one JSON document
// instead is read as well.
func (o *OpenAI) Answer(ctx context.Context, t Turn, onDelta func(string)) (string, error) {
	body, err := json.Marshal(chatRequest{
		Model:     o.Model,
		Messages:  []chatMessage{{"system", t.System}, {"user", t.User}},
		Stream:    true,
		MaxTokens: t.MaxTokens,
	})
	if err != nil {
		return "", errorf(CodeHost, false, "cannot encode the request")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(body))
	if err != nil {
		return "", errorf(CodeHost, false, "the agent endpoint URL is not usable")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	if o.Key != "" {
		req.Header.Set("Authorization", "Bearer "+o.Key)
	}
	client := o.Client
	if client == nil {
		client = NewHTTPClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		// err names the URL and the transport's failure, never the key.
		return "", errorf(CodeNetwork, true, "the agent endpoint could not be reached")
	}
	defer resp.Body.Close()
	if err := statusError(resp.StatusCode); err != nil {
		return "", err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	r := io.LimitReader(resp.Body, maxBodyBytes)
	if mt == "text/event-stream" {
		return readEvents(ctx, r, onDelta)
	}
	var c chunk
	if err := json.NewDecoder(r).Decode(&c); err != nil || len(c.Choices) == 0 {
		return "", errorf(CodeHost, true, "the agent endpoint's answer is not a chat completion")
	}
	text := c.Choices[0].Message.Content
	if len(text) > MaxReplyBytes {
		return "", errorf(CodeHost, false, "the agent's reply is longer than %d bytes", MaxReplyBytes)
	}
	if onDelta != nil && text != "" {
		onDelta(text)
	}
	return text, nil
}

// statusError maps an unsuccessful HTTP status to a turn error.
func statusError(status int) error {
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusConflict:
		return errorf(CodeConflict, true, "the agent reported a thread conflict")
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return errorf(CodeHost, false, "the agent endpoint refused the key (HTTP %d): run `broker app agent` again", status)
	case status == http.StatusTooManyRequests || status >= 500:
		return errorf(CodeNetwork, true, "the agent endpoint is unavailable (HTTP %d)", status)
	default:
		return errorf(CodeHost, false, "the agent endpoint refused the request (HTTP %d)", status)
	}
}

// readEvents reads a chat-completions event stream until [DONE] or its end.
func readEvents(ctx context.Context, r io.Reader, onDelta func(string)) (string, error) {
	var text strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxBodyBytes)
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // comments, event names, ids and blank separators
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			return text.String(), nil
		}
		var c chunk
		if json.Unmarshal(data, &c) != nil {
			continue // a keep-alive or a vendor's extra event
		}
		if c.Error != nil {
			return "", errorf(CodeHost, true, "the agent endpoint reported an error while answering")
		}
		if len(c.Choices) == 0 {
			continue
		}
		delta := c.Choices[0].Delta.Content
		if delta == "" {
			delta = c.Choices[0].Message.Content
		}
		if delta == "" {
			continue
		}
		if text.Len()+len(delta) > MaxReplyBytes {
			return "", errorf(CodeHost, false, "the agent's reply is longer than %d bytes", MaxReplyBytes)
		}
		text.WriteString(delta)
		if onDelta != nil {
			onDelta(delta)
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return "", errorf(CodeNetwork, true, "the agent's answer was cut off")
	}
	return text.String(), nil // a stream without [DONE]: what arrived
}
