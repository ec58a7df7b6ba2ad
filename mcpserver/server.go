// Package mcpserver serves the broker's browser methods as Model Context
// Protocol tools, so that any MCP host (Claude Desktop, Claude Code, Cursor,
// VS Code, …) can drive the user's real browser through `broker mcp` — and
// the terminals the user shares (`broker term`) through the same server.
//
// # Model
//
// A [Server] is an ordinary broker client: it dials the broker socket with
// the token from the runtime directory, sends its own random journalKey
// (one per process, so a retried requestId is never performed twice, even
// across reconnects), and uses one sessionId per MCP session. The broker
// connection is made on the first tool call and made again after it is
// lost, so the server starts, and lists its tools, without a broker; a tool
// called then answers with how to start one.
//
// # Tools
//
// terminal_list, terminal_snapshot, terminal_request_control,
// terminal_release_control, terminal_type, terminal_send_key,
// terminal_interrupt and terminal_proposal_state reach the shared
// terminals as an agent of the agent socket v2 (RUNTIME/conn.sock), the
// same public contract as any agent client; the person admits this server
// there in the bar of their terminal.
//
// browser_list, browser_claim, browser_observe, browser_act, browser_batch,
// browser_frames, browser_screenshot and browser_handoff follow the
// reference's public tool list (names and arguments). Results are text
// written for a model: observations as a compact outline (see [Outline]),
// frames as another (see [FrameOutline]), refusals as tool errors that name
// the registry code and say what to do next (see [Hint]). A screenshot is an
// image with a caption (see [ScreenshotResult]).
//
// # Screenshots
//
// The extension paints every frame not provably of the lease's origin
// black before the image leaves the browser. browser_screenshot publishes
// an image only while its lease is valid: after browser.capture it asks
// browser.validateLease on the same broker connection (never a new one),
// and browser_handoff or the lease's end revokes a capture not yet
// returned; a revoked capture answers LEASE_REVOKED and no image.
//
// # Batch approvals
//
// The broker asks the client to approve each step of a browser.batch
// (browser.approveBatchStep). The server asks the user through MCP
// elicitation when the host declared that capability, and allows a step
// only on an explicit "yes". A host without elicitation cannot ask, so every
// step is refused and the model is told to use browser_act instead.
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/wire"
)

// Options configure a Server.
type Options struct {
	RuntimeDir  string // the broker's runtime directory; "" is the default
	SocketPath  string // "" is RUNTIME/broker.sock
	AgentSocket string // the shared terminals' agent socket; "" is $CONN_SOCKET, else RUNTIME/conn.sock
	Version     string // reported to MCP hosts
	Logger      *slog.Logger
	// NameProcess renames the process after the MCP host (e.g. "mcp
	// claude-code") before it dials the broker, which shows the process
	// name in the user's approval window. Only for a process of its own.
	NameProcess bool
}

// admissionWait bounds the wait for the owner's admission on the first
// tool call (hosts commonly give a tool call about a minute).
const admissionWait = 45 * time.Second

// protocolVersions are the MCP versions served. 2026-07-28 is left out on
// purpose: it forbids server-to-client requests during a tool call, and a
// batch step's approval arrives from the broker in the middle of one.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Server is an MCP server backed by one broker connection. Its methods are
// safe for concurrent use.
type Server struct {
	opts       Options
	log        *slog.Logger
	journalKey string
	mcp        *mcp.Server
	terms      *terminals // the shared terminals (terminal.go)

	dialMu sync.Mutex // serialises dialing; lock order: dialMu, then mu
	mu     sync.Mutex
	conn   *client.Client
	// sessions holds the state of each MCP session, by session.
	sessions map[*mcp.ServerSession]*session
	// approvals are the batches in flight, by approvalId.
	approvals map[string]*approval
	// sampler is the session whose host answers app turns (apps.go).
	sampler *mcp.ServerSession
}

// session is one MCP session's view of the broker.
type session struct {
	id string // the broker sessionId
	ss *mcp.ServerSession

	mu    sync.Mutex
	pages map[string]*pageInfo // by leaseId: what the last observation showed
	// captures are the screenshots taken and not yet returned, by leaseId.
	captures map[string]map[*pendingCapture]bool
}

// pageInfo remembers the last observation of a leased page, to name the
// elements of a batch step when asking the user.
type pageInfo struct {
	title, url string
	labels     map[string]string // ref → `button "Add one"`
	// obs is the last whole observation, which the next action's change
	// is measured from (nil after a read that gives no cursor).
	obs *browser.Observation
	// frames are the child frames read with it, kept while the page shows
	// the same document.
	frames []browser.InlineFrame
}

// approval is one browser.batch waiting for its steps' approvals.
type approval struct {
	sess    *session
	leaseID string
	steps   []browser.BatchStep

	mu     sync.Mutex
	denied string // why a step was refused without asking, for the result
}

// New returns a Server with the browser tools registered.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{
		opts:       opts,
		log:        opts.Logger,
		journalKey: randomHex(32),
		sessions:   make(map[*mcp.ServerSession]*session),
		approvals:  make(map[string]*approval),
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{
		Name:    "dsh-browser",
		Title:   "DSH browser broker",
		Version: opts.Version,
	}, &mcp.ServerOptions{
		Instructions:              instructions,
		Logger:                    slog.New(atLeast{opts.Logger.Handler(), slog.LevelWarn}),
		Capabilities:              &mcp.ServerCapabilities{},
		SupportedProtocolVersions: protocolVersions,
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			go s.offerSampling(context.Background(), req.Session)
		},
	})
	s.terms = &terminals{s: s}
	s.addTools()
	s.addAppTools()
	s.addTerminalTools()
	return s
}

const instructions = `Drive the user's real web browser (Chrome with the DSH extension) through the DSH broker.
Workflow: browser_list (browsers, then tabs) → browser_claim a tab (the user may have to approve) → browser_observe → browser_act (or browser_batch) with refs and the documentEpoch from the latest observation → observe again as needed → browser_handoff when done.
browser_screenshot shows how the page looks (cross-origin frames painted black); it is for looking only: act with refs from browser_observe, never with coordinates. browser_frames lists the page's frames and their origins (metadata only).
The user sees an ON badge on a tab under control and can press Stop at any time.
Snug apps: app_write a small single-file app for the user (its frames are described there), app_open it in their browser, app_source and app_save_version to change it, app_versions and app_revert to undo.
The terminal_* tools work in the terminals the user shares with you (each runs ` + "`broker term`" + `): terminal_list → terminal_snapshot → terminal_request_control (the user grants it) → terminal_type → terminal_send_key Enter (in co-pilot mode the user accepts each command first) → terminal_snapshot to read the output → terminal_release_control when done. The user takes control back whenever they type.`

// Serve runs one MCP session over t until the peer disconnects or ctx ends,
// then releases the session's leases. For stdio, t is an [mcp.IOTransport]
// over the process's stdin and stdout.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		ss.Close()
		<-done
		err = nil
	}
	s.endSession(ss)
	return err
}

// Close closes the broker connection (the broker ends every lease of it)
// and the agent socket connection (its terminal control ends).
func (s *Server) Close() error {
	s.terms.close()
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		return c.Close()
	}
	return nil
}

// StdioTransport is an MCP transport over the given stdin and stdout, which
// are not closed.
func StdioTransport(stdin io.Reader, stdout io.Writer) mcp.Transport {
	return &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// session returns the state of an MCP session, creating it on first use.
func (s *Server) session(ss *mcp.ServerSession) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.sessions[ss]; ok {
		return se
	}
	se := &session{id: "mcp-" + randomHex(8), ss: ss, pages: make(map[string]*pageInfo), captures: make(map[string]map[*pendingCapture]bool)}
	s.sessions[ss] = se
	return se
}

// endSession forgets an MCP session and releases its leases.
func (s *Server) endSession(ss *mcp.ServerSession) {
	s.mu.Lock()
	se, ok := s.sessions[ss]
	delete(s.sessions, ss)
	if s.sampler == ss {
		s.sampler = nil
	}
	c := s.conn
	s.mu.Unlock()
	if !ok || c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Call(ctx, "browser.releaseSession", map[string]string{"sessionId": se.id}); err != nil {
		s.log.Debug("releaseSession failed", "session", se.id, "err", err)
	}
}

// broker returns the live broker connection, dialing it if there is none.
func (s *Server) broker(ctx context.Context, ss *mcp.ServerSession) (*client.Client, error) {
	s.dialMu.Lock()
	defer s.dialMu.Unlock()
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c != nil {
		select {
		case <-c.Done():
			s.log.Info("the broker connection was lost; dialing again")
		default:
			return c, nil
		}
	}
	if s.opts.NameProcess && ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			nameProcess("mcp " + p.ClientInfo.Name)
		}
	}
	// Under --admission=prompt the owner admits this server in the browser
	// first; wait for that within what MCP hosts allow a tool call.
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second+admissionWait)
	defer cancel()
	c, err := client.Dial(dctx, client.Options{
		RuntimeDir: s.opts.RuntimeDir,
		SocketPath: s.opts.SocketPath,
		JournalKey: s.journalKey,
		// A page's frames come with its observation; a broker too old to
		// bring them is refused with what to do, not silently frameless.
		Capabilities:         []string{browser.CapObserveFrames},
		RequiredCapabilities: []string{browser.CapObserveFrames},
		OnEvent:              s.onEvent,
		OnRequest:            s.onRequest,
		AdmissionWait:        admissionWait,
		OnAdmissionWait: func() {
			s.log.Info("waiting for the owner to admit this MCP server in the browser", "wait", admissionWait)
		},
	})
	if err != nil {
		if client.IsCode(err, wire.CodeAdmissionPending) || client.IsCode(err, wire.CodeAdmissionDenied) {
			return nil, err // the owner's answer (or its absence), with its own hint
		}
		if _, ok := errors.AsType[*client.OutdatedError](err); ok {
			s.log.Error("the broker is older than broker mcp", "err", err)
			return nil, fmt.Errorf("the running DSH broker is older than this MCP server (%v). Ask the user to restart it (`systemctl --user restart broker.service` where it is installed as a service, else stop `broker serve` and start it again); then call this tool again", err)
		}
		s.log.Warn("cannot reach the broker", "err", err)
		return nil, notRunning(err)
	}
	s.log.Info("connected to the broker", "epoch", c.Welcome().ConnectionEpoch)
	s.mu.Lock()
	s.conn = c
	sampler := s.sampler
	s.mu.Unlock()
	if sampler != nil {
		go s.offerSampling(context.Background(), sampler) // the offer went with the old connection
	}
	return c, nil
}

// call sends one broker request for an MCP session and decodes its value
// into out (when non-nil). Errors are tool errors.
func (s *Server) call(ctx context.Context, ss *mcp.ServerSession, timeout time.Duration, method string, params, out any) error {
	c, err := s.broker(ctx, ss)
	if err != nil {
		return err
	}
	return s.callOn(ctx, c, timeout, method, params, out)
}

// callOn is call on a given broker connection, which is not dialed again
// when it is lost.
func (s *Server) callOn(ctx context.Context, c *client.Client, timeout time.Duration, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	raw, err := c.Call(ctx, method, params)
	s.log.Debug("broker call", "method", method, "ms", time.Since(start).Milliseconds())
	if err != nil {
		s.log.Debug("broker refused", "method", method, "err", err)
		return toolError(method, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.log.Error("unexpected broker answer", "method", method, "err", err)
			return toolError(method, wire.Err(wire.CodeInternalError))
		}
	}
	return nil
}

// onEvent handles broker events. It must not block.
func (s *Server) onEvent(ev *wire.Envelope) {
	if ev.Event != "browser.lease-revoked" {
		return
	}
	var v struct {
		SessionID string `json:"sessionId"`
		LeaseID   string `json:"leaseId"`
	}
	if json.Unmarshal(ev.Value, &v) != nil {
		return
	}
	s.log.Info("lease ended", "session", v.SessionID, "lease", v.LeaseID)
	s.mu.Lock()
	for _, se := range s.sessions {
		if se.id == v.SessionID {
			se.forget(v.LeaseID)
		}
	}
	s.mu.Unlock()
}

// onRequest answers broker-to-client requests: batch step approvals.
func (s *Server) onRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == apps.MethodSample {
		return s.sample(ctx, params)
	}
	if method != "browser.approveBatchStep" {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	var p struct {
		ApprovalID string `json:"approvalId"`
		Index      int    `json:"index"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	s.mu.Lock()
	a := s.approvals[p.ApprovalID]
	s.mu.Unlock()
	if a == nil {
		s.log.Warn("approval for an unknown batch", "approvalId", p.ApprovalID)
		return map[string]bool{"allowed": false}, nil
	}
	return map[string]bool{"allowed": s.approveStep(ctx, a, p.Index)}, nil
}

// remember records what an observation showed, for approval questions and
// as the baseline of the next action's change.
func (se *session) remember(leaseID string, o *browser.Observation) {
	if o == nil {
		return
	}
	pi := &pageInfo{title: o.Title, url: o.URL, labels: make(map[string]string, len(o.Nodes))}
	if o.Cursor != "" {
		pi.obs = o
	}
	for i := range o.Nodes {
		pi.labels[o.Nodes[i].ID] = label(&o.Nodes[i])
	}
	se.mu.Lock()
	if old := se.pages[leaseID]; old != nil && old.obs != nil && pi.obs != nil && old.obs.DocumentEpoch == pi.obs.DocumentEpoch {
		pi.frames = old.frames
	}
	if len(se.pages) >= 64 {
		clear(se.pages) // a bound; labels are only a courtesy
	}
	se.pages[leaseID] = pi
	se.mu.Unlock()
}

func (se *session) page(leaseID string) *pageInfo {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.pages[leaseID]
}

// atLeast passes on only records at or above a level: the SDK's own
// session chatter stays out of the log.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(as), h.min}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.min}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
