package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/contract"
	"github.com/dsh-browser/broker/wire"
)

// The Snug app tools: an agent writes a micro-app for the user, saves new
// versions of it, and opens it in the user's browser. And MCP sampling: a
// host that can sample offers to answer the apps' agent turns.

type (
	AppWriteInput struct {
		Name            string `json:"name" jsonschema:"the app's name, shown to the user (at most 80 characters)"`
		HTML            string `json:"html" jsonschema:"the whole app: one self-contained HTML file (at most 512 KiB) speaking the Snug frames described in this tool's description"`
		Description     string `json:"description,omitempty" jsonschema:"one or two sentences on what it does (at most 400 characters)"`
		IconEmoji       string `json:"iconEmoji,omitempty" jsonschema:"one emoji for its icon"`
		RuntimeContract string `json:"runtimeContract,omitempty" jsonschema:"optional runtime contract: a JSON object {overview, personaNote?, stateGuidance?, responseGuidance?, settings?, maxOutputTokens?} that becomes the system instructions of the app's agent turns"`
	}
	AppSaveInput struct {
		App             string `json:"app" jsonschema:"the app's id or name, from app_list"`
		HTML            string `json:"html" jsonschema:"the new version: the whole HTML file, not a diff"`
		Note            string `json:"note,omitempty" jsonschema:"what changed, in a few words"`
		RuntimeContract string `json:"runtimeContract,omitempty" jsonschema:"a new runtime contract; omit it to keep the current one"`
	}
	AppRefInput struct {
		App string `json:"app" jsonschema:"the app's id or name, from app_list"`
	}
	AppSourceInput struct {
		App     string `json:"app" jsonschema:"the app's id or name, from app_list"`
		Version int    `json:"version,omitempty" jsonschema:"a version number from app_versions; omit it for the current version"`
	}
	AppRevertInput struct {
		App     string `json:"app" jsonschema:"the app's id or name, from app_list"`
		Version int    `json:"version" jsonschema:"the version to bring back, from app_versions"`
	}
)

// appGuide teaches a model to write a Snug app.
const appGuide = `A Snug app is ONE self-contained HTML file. It runs in a sandboxed iframe of the user's browser: no network, no cookies or localStorage, no popups, no eval. Scripts and styles may be inline, or from cdn.jsdelivr.net, cdnjs.cloudflare.com or unpkg.com only.
It talks to its host with window.parent.postMessage(frame, '*') and listens with addEventListener('message', e => …) (check e.source === parent). Every frame has v: 1.
- On start send {v:1, type:'snug:app-announce', appId, displayName, description?, iconEmoji?}. The host answers {type:'snug:host-ready', instanceId, capabilities}; keep instanceId and put it in every request. Another host-ready with a new instanceId means a reload: requests in flight were dropped.
- Storage (its own SQLite database, kept across restarts): {v:1, type:'snug:db-request', requestId, instanceId, op:'exec', sql, params?} → {type:'snug:db-response', requestId, ok, columns, rows} (one statement per exec; CREATE TABLE IF NOT EXISTS at start; table names must not start with snug_, sqlite_ or app_). Key/value: op:'kvSet' with key and value (any JSON), op:'kvGet' with key → value. At most 8 requests in flight.
- Thinking (the user's own agent): {v:1, type:'snug:app-message', requestId, instanceId, appId, action, payload?, state?} → zero or more {type:'snug:app-response', requestId, ok:true, streaming:true, text} (the reply so far), then one final {type:'snug:app-response', requestId, ok:true, data} (a JSON object; data.message is text for the user) or {ok:false, error:{code, message}}. Cancel with {v:1, type:'snug:app-cancel', requestId, instanceId}.
- Every request gets exactly one final answer; handle ok:false (error.code, error.message, error.retryable).`

func (s *Server) addAppTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "app_list",
		Title:       "List the user's apps",
		Description: "List the user's Snug micro-apps: small single-file tools (a habit tracker, a reading list…) that run in a sandboxed tab of their browser and keep their data in the user's own database. Shows each app's id, name, current version and whether a tab shows it now.",
		InputSchema: inputSchema[struct{}](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.appList)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "app_write",
		Title:       "Write a new app",
		Description: "Install a new Snug micro-app that you wrote for the user (version 1). Then call app_open to show it to them.\n\n" + appGuide,
		InputSchema: inputSchema[AppWriteInput](nil),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: &no, DestructiveHint: &no},
	}, s.appWrite)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "app_save_version",
		Title: "Save a new version of an app",
		Description: "Save a new version of an app (the whole HTML file). Tabs showing it reload with the new version at once; its data stays. Earlier versions are kept (app_versions) and can be brought back (app_revert). " +
			"Read the current source first with app_source. The file follows the same rules as in app_write.",
		InputSchema: inputSchema[AppSaveInput](nil),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: &no, DestructiveHint: &no},
	}, s.appSave)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "app_source",
		Title:       "Read an app's source",
		Description: "Return the HTML of an app's current version (or of an earlier one), and its runtime contract if it has one, to read it or to edit it for app_save_version.",
		InputSchema: inputSchema[AppSourceInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.appSource)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "app_open",
		Title:       "Show an app to the user",
		Description: "Open an app in a new tab of the user's browser (Chrome with the DSH extension), where the user uses it. The tab shows the app's name and icon in a bar the app cannot draw over.",
		InputSchema: inputSchema[AppRefInput](nil),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: &no, DestructiveHint: &no},
	}, s.appOpen)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "app_versions",
		Title:       "List an app's versions",
		Description: "List the stored versions of an app, newest first: which is current, which is pinned (the installed version, kept forever), when each was saved and its note.",
		InputSchema: inputSchema[AppRefInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.appVersions)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "app_revert",
		Title:       "Bring back an earlier version",
		Description: "Make an earlier version of an app current again: it is copied forward as a new version (nothing is lost), and tabs showing the app reload. Use it to undo a change that broke the app.",
		InputSchema: inputSchema[AppRevertInput](nil),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: &no, DestructiveHint: &no},
	}, s.appRevert)
}

// appHints are what a model should do after an app tool's refusal.
var appHints = map[wire.Code]string{
	wire.CodeStaleTarget:       "no such app or version: call app_list (and app_versions)",
	wire.CodeAmbiguousTarget:   "several apps have that name: use the app's id from app_list",
	wire.CodeInvalidRequest:    "the broker refused the arguments: the HTML must be 1 byte to 512 KiB, the name at most 80 characters, and a runtimeContract must follow its rules exactly",
	wire.CodeConnectionLost:    "no browser with the DSH extension is connected: ask the user to open their browser (`broker status` shows what is connected), then call app_open again",
	wire.CodeBrokerStateUnsafe: "the user's app database is unavailable: ask the user to run `broker status`",
	wire.CodeQueueFull:         "the user's app database is full: ask the user",
}

func init() {
	for _, m := range []string{apps.MethodApps, apps.MethodInstall, apps.MethodUpdate, apps.MethodSource,
		apps.MethodOpen, apps.MethodVersions, apps.MethodRevert} {
		methodHints[m] = appHints
	}
}

func (s *Server) appList(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	var list []apps.App
	if err := s.call(ctx, req.Session, readTimeout, apps.MethodApps, apps.AppsParams{}, &list); err != nil {
		return nil, nil, err
	}
	if len(list) == 0 {
		return text("The user has no apps yet. Write one with app_write."), nil, nil
	}
	var b strings.Builder
	for _, a := range list {
		open := ""
		if a.Open > 0 {
			open = ", open in a tab"
		}
		fmt.Fprintf(&b, "- %s %q (id %s), version %d%s", a.IconEmoji, a.DisplayName, a.ID, a.CurrentVersion, open)
		if a.Description != "" {
			fmt.Fprintf(&b, ": %s", a.Description)
		}
		b.WriteByte('\n')
	}
	return text(b.String()), nil, nil
}

// checkAppFile says, before the broker is asked, why it would refuse.
func checkAppFile(html, runtimeContract string) error {
	if html == "" || len(html) > apps.MaxHTMLBytes {
		return fmt.Errorf("the HTML is %d bytes; an app must be 1 byte to %d bytes (load big libraries from the CDN allowlist)", len(html), apps.MaxHTMLBytes)
	}
	if runtimeContract != "" {
		if _, err := contract.Parse(runtimeContract); err != nil {
			return fmt.Errorf("%v (allowed members: overview 1–600 characters, personaNote ≤400, stateGuidance ≤500, responseGuidance ≤500, settings ≤16 scalar entries with keys [a-z0-9_]{1,40}, maxOutputTokens 256–8192; 2,560 characters in all)", err)
		}
	}
	return nil
}

func (s *Server) appWrite(ctx context.Context, req *mcp.CallToolRequest, in AppWriteInput) (*mcp.CallToolResult, any, error) {
	if err := checkAppFile(in.HTML, in.RuntimeContract); err != nil {
		return nil, nil, err
	}
	var saved apps.Saved
	err := s.call(ctx, req.Session, readTimeout, apps.MethodInstall, apps.InstallParams{HTML: in.HTML, DisplayName: in.Name,
		Description: in.Description, IconEmoji: in.IconEmoji, RuntimeContract: in.RuntimeContract}, &saved)
	if err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("Installed %q as app %s (version 1). Next: app_open to show it to the user.", saved.App.DisplayName, saved.App.ID)), nil, nil
}

func (s *Server) appSave(ctx context.Context, req *mcp.CallToolRequest, in AppSaveInput) (*mcp.CallToolResult, any, error) {
	if err := checkAppFile(in.HTML, in.RuntimeContract); err != nil {
		return nil, nil, err
	}
	var saved apps.Saved
	err := s.call(ctx, req.Session, readTimeout, apps.MethodUpdate, apps.UpdateParams{App: in.App, HTML: in.HTML, Note: in.Note,
		RuntimeContract: in.RuntimeContract}, &saved)
	if err != nil {
		return nil, nil, err
	}
	msg := fmt.Sprintf("Saved %q version %d.", saved.App.DisplayName, saved.Version.Version)
	if saved.Reloaded > 0 {
		msg += fmt.Sprintf(" %d open tab(s) now show it.", saved.Reloaded)
	} else {
		msg += " No tab shows it now: app_open shows it to the user."
	}
	return text(msg), nil, nil
}

func (s *Server) appSource(ctx context.Context, req *mcp.CallToolRequest, in AppSourceInput) (*mcp.CallToolResult, any, error) {
	var src apps.Source
	if err := s.call(ctx, req.Session, readTimeout, apps.MethodSource, apps.SourceParams{App: in.App, Version: in.Version}, &src); err != nil {
		return nil, nil, err
	}
	out := fmt.Sprintf("Version %d of app %s:\n\n%s", src.Version, src.App, src.HTML)
	if src.RuntimeContract != "" {
		out += "\n\nRuntime contract:\n" + src.RuntimeContract
	}
	return text(out), nil, nil
}

func (s *Server) appOpen(ctx context.Context, req *mcp.CallToolRequest, in AppRefInput) (*mcp.CallToolResult, any, error) {
	var o apps.Opened
	if err := s.call(ctx, req.Session, readTimeout, apps.MethodOpen, apps.AppRef{App: in.App}, &o); err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("Opened %q (version %d) in a new tab of the user's browser.", o.App.DisplayName, o.App.CurrentVersion)), nil, nil
}

func (s *Server) appVersions(ctx context.Context, req *mcp.CallToolRequest, in AppRefInput) (*mcp.CallToolResult, any, error) {
	var vs []apps.Version
	if err := s.call(ctx, req.Session, readTimeout, apps.MethodVersions, apps.AppRef{App: in.App}, &vs); err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "- version %d, saved %s, %d bytes", v.Version, v.CreatedAt.Format(time.DateTime), v.HTMLBytes)
		if v.Current {
			b.WriteString(", current")
		}
		if v.Pinned {
			b.WriteString(", pinned")
		}
		if v.Note != "" {
			fmt.Fprintf(&b, ": %s", v.Note)
		}
		b.WriteByte('\n')
	}
	return text(b.String()), nil, nil
}

func (s *Server) appRevert(ctx context.Context, req *mcp.CallToolRequest, in AppRevertInput) (*mcp.CallToolResult, any, error) {
	var saved apps.Saved
	if err := s.call(ctx, req.Session, readTimeout, apps.MethodRevert, apps.RevertParams{App: in.App, Version: in.Version}, &saved); err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("Version %d of %q is current again, as version %d.", in.Version, saved.App.DisplayName, saved.Version.Version)), nil, nil
}

// offerSampling tells the broker this session's host can answer app turns
// (apps.MethodAgentOffer), when the host declared sampling. It is called
// once the session is initialized, and again after each new broker
// connection.
func (s *Server) offerSampling(ctx context.Context, ss *mcp.ServerSession) {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Sampling == nil {
		return
	}
	host := "mcp host"
	if p.ClientInfo != nil && p.ClientInfo.Name != "" {
		host = p.ClientInfo.Name
	}
	s.mu.Lock()
	s.sampler = ss
	s.mu.Unlock()
	c, err := s.broker(ctx, ss)
	if err != nil {
		s.log.Debug("cannot offer sampling to the broker now", "err", err)
		return
	}
	if err := s.callOn(ctx, c, readTimeout, apps.MethodAgentOffer, apps.AgentOfferParams{Host: host}, nil); err != nil {
		s.log.Debug("the broker did not take the sampling offer", "err", err)
	}
}

// sample answers the broker's apps.MethodSample through the host's
// sampling: one app turn, with no context of this conversation.
func (s *Server) sample(ctx context.Context, params json.RawMessage) (any, error) {
	var p apps.SampleParams
	if err := json.Unmarshal(params, &p); err != nil || p.MaxTokens <= 0 {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	s.mu.Lock()
	ss := s.sampler
	s.mu.Unlock()
	if ss == nil {
		return nil, wire.Err(wire.CodeConnectionLost)
	}
	res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{
		SystemPrompt:   p.System,
		Messages:       []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: p.User}}},
		MaxTokens:      int64(p.MaxTokens),
		IncludeContext: "none",
	})
	if err != nil {
		s.log.Info("the MCP host did not sample an app turn", "err", err)
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, wire.Err(wire.CodePolicyDenied)
	}
	tc, ok := res.Content.(*mcp.TextContent)
	if !ok {
		return nil, wire.Err(wire.CodeInternalError)
	}
	return apps.SampleResult{Text: tc.Text, Model: res.Model}, nil
}
