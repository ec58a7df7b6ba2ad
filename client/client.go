// Package client connects to the broker as a v1 client: it reads the token
// from the runtime directory, dials the socket, sends the hello and checks
// the welcome. `broker call`, `broker status`, `broker mcp` and the tests all
// use it.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/internal/paths"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// Options configure Dial. The zero value dials the default socket.
type Options struct {
	RuntimeDir string // default paths.RuntimeDir("")
	SocketPath string // default paths.Socket("", RuntimeDir)
	Token      string // default: read RUNTIME/auth-token

	JournalKey           string   // 64 lowercase hex; optional
	RequiredCapabilities []string // the welcome must offer each of these
	Capabilities         []string // offered besides those every client offers

	// OnEvent receives broker events; it must not block.
	OnEvent func(ev *wire.Envelope)
	// AdmissionWait, when positive, makes Dial wait that long for the owner
	// to admit this connection if the broker asks (broker.admission.v1 in
	// the welcome, --admission=prompt). OnAdmissionWait, if set, is called
	// once when that wait starts, to tell the user what to do.
	AdmissionWait   time.Duration
	OnAdmissionWait func()
	// OnRequest answers broker-to-client requests; nil refuses them.
	OnRequest func(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// OutdatedError is Dial's error when the broker does not offer a required
// capability: it runs an older version than the client's.
type OutdatedError struct{ Missing []string }

func (e *OutdatedError) Error() string {
	return fmt.Sprintf("the broker does not offer %s: upgrade the broker", strings.Join(e.Missing, ", "))
}

// Client is an authenticated connection to the broker.
type Client struct {
	conn      *rpc.Conn
	welcome   *wire.Welcome
	opts      Options
	admission chan string // the owner's answer: "granted" or "denied"
}

// Dial connects, authenticates and negotiates. Errors say what to do: a
// broker that is not running, a missing token, a refused hello.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	runtimeDir := paths.RuntimeDir(opts.RuntimeDir)
	socket := paths.Socket(opts.SocketPath, runtimeDir)
	token := opts.Token
	if token == "" {
		b, err := os.ReadFile(paths.Token(runtimeDir))
		if err != nil {
			return nil, fmt.Errorf("read the broker token: %w (is the broker running? start it with `broker serve`)", err)
		}
		token = strings.TrimSpace(string(b))
	}
	nc, err := dial(ctx, socket)
	if err != nil {
		return nil, fmt.Errorf("connect to the broker at %s: %w (start it with `broker serve`)", socket, err)
	}
	c := &Client{opts: opts, admission: make(chan string, 1)}
	c.conn = rpc.New(nc, handler{c}, rpc.Limits{}, nil)
	go c.conn.Run()

	hello := wire.Hello{
		Bootstrap:  wire.Bootstrap,
		Versions:   []int{wire.Version},
		Role:       wire.RoleClient,
		Token:      token,
		JournalKey: opts.JournalKey,
		// rpc.Conn.Call numbers its requests 1, 2, 3, …; admission codes are
		// understood (Client.Admission); it may act in frames beyond click,
		// and ask an action for what changed (since).
		Capabilities: append([]string{wire.CapOrderedIDs, wire.CapAdmission, browser.CapFrameInputClient, browser.CapActionDelta, browser.CapObserveFrameOwners},
			opts.Capabilities...),
		RequiredCapabilities: opts.RequiredCapabilities,
	}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	raw, err := c.conn.Call(hctx, "hello", hello)
	if err != nil {
		c.Close()
		return nil, helloError(err)
	}
	w, err := wire.ParseWelcome(raw)
	if err != nil || w.Version != wire.Version {
		c.Close()
		return nil, fmt.Errorf("the broker sent an invalid welcome: %v", err)
	}
	if missing := wire.Missing(opts.RequiredCapabilities, w.Capabilities); len(missing) > 0 {
		c.Close()
		return nil, &OutdatedError{Missing: missing}
	}
	c.welcome = w
	if slices.Contains(w.Capabilities, wire.CapOrderedIDs) {
		c.conn.OrderIncoming()
	}
	if opts.AdmissionWait > 0 && slices.Contains(w.Capabilities, wire.CapAdmission) {
		if err := c.waitAdmission(ctx, opts); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// waitAdmission waits for the owner to admit this connection.
func (c *Client) waitAdmission(ctx context.Context, opts Options) error {
	if opts.OnAdmissionWait != nil {
		opts.OnAdmissionWait()
	}
	select {
	case state := <-c.admission:
		if state != "granted" {
			return fmt.Errorf("the owner denied this connection (%w)", wire.Err(wire.CodeAdmissionDenied))
		}
		return nil
	case <-time.After(opts.AdmissionWait):
		return fmt.Errorf("no answer from the owner in %v (%w): is a browser with the DSH extension open?", opts.AdmissionWait, wire.Err(wire.CodeAdmissionPending))
	case <-ctx.Done():
		return ctx.Err()
	case <-c.conn.Closed():
		return wire.Err(wire.CodeConnectionLost)
	}
}

func helloError(err error) error {
	switch rpc.CodeOf(err) {
	case wire.CodePolicyDenied:
		return fmt.Errorf("the broker refused the token (%w): the token file may belong to another broker run", err)
	case wire.CodeProtocolMismatch:
		return fmt.Errorf("the broker does not speak this client's protocol (%w): upgrade both together", err)
	case wire.CodeConnectionLost:
		return fmt.Errorf("the broker closed the connection (%w): it may be at its connection limit", err)
	}
	return fmt.Errorf("hello failed: %w", err)
}

// Welcome returns the broker's welcome.
func (c *Client) Welcome() *wire.Welcome { return c.welcome }

// Call sends one request and returns its value. A refusal is a *wire.Error.
func (c *Client) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if params == nil {
		params = struct{}{}
	}
	return c.conn.Call(ctx, method, params)
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.conn.Closed() }

type handler struct{ c *Client }

func (h handler) Handle(ctx context.Context, req *rpc.Request) (any, error) {
	if h.c.opts.OnRequest == nil {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	return h.c.opts.OnRequest(ctx, req.Method, req.Params)
}

func (h handler) Event(ev *wire.Envelope) {
	if ev.Event == "broker.admission" {
		var v struct {
			State string `json:"state"`
		}
		if json.Unmarshal(ev.Value, &v) == nil {
			select {
			case h.c.admission <- v.State:
			default:
			}
		}
	}
	if h.c.opts.OnEvent != nil {
		h.c.opts.OnEvent(ev)
	}
}

// IsCode reports whether err carries the registry code.
func IsCode(err error, code wire.Code) bool {
	return errors.Is(err, wire.Err(code))
}

// dial connects to the broker's socket. A full listen backlog (EAGAIN: the
// broker is accepting a burst of connections) is retried with a short
// backoff until ctx ends; any other error is returned at once.
func dial(ctx context.Context, socket string) (net.Conn, error) {
	var d net.Dialer
	backoff := time.Millisecond
	for {
		nc, err := d.DialContext(ctx, "unix", socket)
		if err == nil || !errors.Is(err, syscall.EAGAIN) {
			return nc, err
		}
		select {
		case <-time.After(backoff):
			backoff = min(2*backoff, 50*time.Millisecond)
		case <-ctx.Done():
			return nil, err
		}
	}
}
