package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/lease"
	"github.com/dsh-browser/broker/wire"
)

// The tools' arguments. Schemas are inferred from these types (struct tags
// and `jsonschema` descriptions; fields without omitempty are required),
// reusing the protocol's own types for actions, steps and queries, then
// annotated with the enums and bounds the broker enforces (see schemas.go).
type (
	ListInput struct {
		InstanceID string `json:"instanceId,omitempty" jsonschema:"a browser instance id from browser_list; omit it to list the connected browsers"`
	}
	ClaimInput struct {
		InstanceID string `json:"instanceId" jsonschema:"the browser instance id, from browser_list"`
		Tab        string `json:"tab" jsonschema:"the tab id, from browser_list with instanceId"`
	}
	ObserveInput struct {
		LeaseID string                 `json:"leaseId" jsonschema:"the leaseId from browser_claim"`
		RootRef string                 `json:"rootRef,omitempty" jsonschema:"read only this region or element and what is inside it (with query: search only there): a ref from the latest browser_observe"`
		Query   *browser.Query         `json:"query,omitempty" jsonschema:"find elements by exact accessible name (case-sensitive) instead of reading the whole page; use it on big or truncated pages"`
		Frame   *browser.FrameSelector `json:"frame,omitempty" jsonschema:"read a same-origin child frame instead of the page (with query: search it): its frameId and documentEpoch from browser_frames"`
	}
	ActInput struct {
		LeaseID       string                 `json:"leaseId" jsonschema:"the leaseId from browser_claim"`
		DocumentEpoch string                 `json:"documentEpoch" jsonschema:"the documentEpoch of the observation the ref comes from (the page's, also for a ref of an iframe shown in it)"`
		Action        browser.Action         `json:"action" jsonschema:"what to do, on which element"`
		RequestID     string                 `json:"requestId,omitempty" jsonschema:"identifies this action; omit it for a new action (one is generated and shown in the result); pass the same one again only to retry an action whose result you did not get"`
		TimeoutMs     *int                   `json:"timeoutMs,omitempty" jsonschema:"give up after this many milliseconds (default 10000)"`
		Frame         *browser.FrameSelector `json:"frame,omitempty" jsonschema:"act inside a same-origin child frame: the frame's frameId and documentEpoch, as in the browser_observe frame call the ref came from (documentEpoch above is then the frame's too)"`
	}
	NavigateInput struct {
		LeaseID      string `json:"leaseId" jsonschema:"the leaseId from browser_claim"`
		URL          string `json:"url" jsonschema:"the http or https URL to open in the leased tab"`
		ExpectedText string `json:"expectedText,omitempty" jsonschema:"text the new page shows once loaded; without it the result is verified by the new page loading, wherever a redirect or the page's router took it"`
		RequestID    string `json:"requestId,omitempty" jsonschema:"as for browser_act: omit it for a new navigation, reuse it only to retry one whose result you did not get"`
		TimeoutMs    *int   `json:"timeoutMs,omitempty" jsonschema:"give up waiting for the page after this many milliseconds (default 10000)"`
	}
	BatchInput struct {
		LeaseID       string              `json:"leaseId" jsonschema:"the leaseId from browser_claim"`
		DocumentEpoch string              `json:"documentEpoch" jsonschema:"the documentEpoch of the observation every ref comes from"`
		Steps         []browser.BatchStep `json:"steps" jsonschema:"1 to 8 steps, run in order"`
		TimeoutMs     *int                `json:"timeoutMs,omitempty" jsonschema:"deadline of the whole batch in milliseconds, including the user's answers (default and maximum 30000)"`
		RequestID     string              `json:"requestId,omitempty" jsonschema:"identifies this batch; as for browser_act: omit it for a new batch, reuse it only to retry one whose result you did not get"`
	}
	ReadPageInput struct {
		LeaseID      string                 `json:"leaseId" jsonschema:"the leaseId from browser_claim"`
		RootRef      string                 `json:"rootRef,omitempty" jsonschema:"read only this region or element: a ref from an earlier browser_read_page window; omit it to read the whole page"`
		Continuation string                 `json:"continuation,omitempty" jsonschema:"the continuation from the previous window, to read the next one (single use, valid 2 minutes); omit it to start at the top"`
		Frame        *browser.FrameSelector `json:"frame,omitempty" jsonschema:"read a same-origin child frame instead of the page: its frameId and documentEpoch from browser_frames (repeat it with the continuation)"`
	}
	FramesInput struct {
		LeaseID string `json:"leaseId" jsonschema:"the leaseId from browser_claim"`
	}
	ScreenshotInput struct {
		LeaseID string `json:"leaseId" jsonschema:"the leaseId from browser_claim"`
	}
	HandoffInput struct {
		LeaseID string `json:"leaseId" jsonschema:"the leaseId from browser_claim"`
	}
)

// ClaimOutput is browser_claim's structured result: the lease without its
// token.
type ClaimOutput struct {
	LeaseID    string `json:"leaseId" jsonschema:"pass it to the other tools"`
	Tab        string `json:"tab" jsonschema:"the claimed tab"`
	InstanceID string `json:"instanceId" jsonschema:"the tab's browser instance"`
	Origin     string `json:"origin" jsonschema:"the page's origin when claimed"`
	Scope      string `json:"scope" jsonschema:"origin: the lease ends when the tab leaves this origin; tab: it follows the tab"`
	ExpiresAt  int64  `json:"expiresAt" jsonschema:"when the lease ends at the latest, in ms since the Unix epoch"`
}

// Broker call timeouts, beyond the broker's own deadlines.
const (
	readTimeout  = 20 * time.Second
	claimTimeout = browser.ApprovalTimeout + 15*time.Second // the user may have to approve
	actSlack     = 10 * time.Second
)

var (
	yes = true
	no  = false
)

func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "browser_list",
		Title:       "List browsers or tabs",
		Description: "List the browsers connected to the DSH broker; with instanceId, list that browser's web (HTTP/HTTPS) tabs with their ids, titles and URLs. Start here to find the tab to work in, then call browser_claim with the instanceId and the tab's id.",
		InputSchema: inputSchema[ListInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.list)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "browser_claim",
		Title: "Take control of a tab",
		Description: "Ask for control of one tab of the user's real browser. Depending on the user's settings the user approves it in a browser window (this can take up to a minute) or it is granted at once. " +
			"Returns a leaseId. Control lasts at most 5 minutes (expiresAt) and ends early when the user presses Stop, the tab navigates to another site (origin scope), or you call browser_handoff; then claim again. " +
			"Next: browser_observe with the leaseId.",
		InputSchema: inputSchema[ClaimInput](nil),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: &no, DestructiveHint: &no},
	}, s.claim)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "browser_observe",
		Title: "Read the page",
		Description: "Read the leased tab as a compact outline: its controls with the ref to act on and their state (value, checked, disabled), elements the page made clickable itself (a generic div or span, a calendar day, an icon: shown with their role, e.g. generic, and the text on them), named regions (their refs read one region with rootRef, or scroll it), and the page's text. " +
			"The second line gives the leaseId and documentEpoch to pass to browser_act with a ref. Refs and the documentEpoch belong to this document: after a navigation, or when an action answers STALE_TARGET, observe again. " +
			"Same-origin iframes (up to 4) follow the page, indented: their refs act directly in browser_act with the page's documentEpoch; iframes of other sites are listed as not readable. " +
			"Long pages are cut (marked truncated): to find one element there, pass query with its exact accessible name (and role), or rootRef to read one region only (with query: search only there); to read all of it, use browser_read_page.",
		InputSchema: inputSchema[ObserveInput](annotateObserve),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.observe)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "browser_act",
		Title: "Click, type, press keys, drag, select or scroll",
		Description: "Do one thing in the leased tab, on an element ref from the latest browser_observe together with its documentEpoch: click; fill (replace a field's value); type (insert at the caret); append (add to the end of a field's value); press a named key; " +
			"check a checkbox or switch, or choose a radio button; select an option of a drop-down by its label or value; scroll the page or one scrollable element; wheel over an element; navigate to a URL (or use browser_navigate); " +
			"dblclick; hover; a key chord; drag; click at a point of an element. Examples of action: " +
			`{"kind":"click","ref":"r…"}; {"kind":"dblclick","ref":"r…"} (edit a list item); {"kind":"hover","ref":"r…","expected":{"text":"Settings"}} (open a menu); ` +
			`{"kind":"chord","ref":"r…","key":"f","modifiers":["Control"]} (an editor's search); {"kind":"chord","ref":"r…","key":"o","modifiers":[]} (a one-key shortcut); ` +
			`{"kind":"drag","ref":"r…","toRef":"r…"} (reorder, drop); {"kind":"drag","ref":"r…","deltaX":120,"deltaY":0} (draw, move a slider); ` +
			`{"kind":"clickAt","ref":"r…","x":40,"y":12} (a canvas or chart); {"kind":"select","ref":"r…","value":"de"}. ` +
			"A click lands like a person's: on the element, anything drawn inside it, or a label that activates it; when something else covers it (a dialog, a banner), the result names it with its ref: deal with that first. " +
			"fill, append, check and select verify the field, box or option they leave; give action.expected ({text}, {value}, {url} or {ref, state}) to have the page checked too: the result says succeeded only when it holds; without a check it says unknown (not verified). " +
			"The result shows the outcome and what changed on the page since you last saw it (elements that appeared with their refs, changed or went; text that came or went); refs you already have still hold. After acting on a ref from a query it shows what changed among that query's matches (observe again to see the rest). After a navigation it shows the whole new page. " +
			"requestId is optional: when absent one is generated and shown in the result. To retry an action whose result you did not get (timeout, lost connection), call again with the SAME requestId: the broker never performs one requestId twice. A new action needs a new requestId (or none).",
		InputSchema: inputSchema[ActInput](annotateAct),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes},
	}, s.act)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "browser_navigate",
		Title: "Open a URL in the tab",
		Description: "Go to an http or https URL in the leased tab and wait until the new page is loaded; the result shows the new page with fresh refs (refs of the old page no longer work). " +
			"A lease of scope origin may only go to URLs of its own origin (POLICY_DENIED otherwise: claim a tab of the other site); a lease of scope tab may go anywhere on the web. " +
			"Give expectedText to have the page checked for that text; otherwise it is verified by the new page loading, wherever a redirect or the page's own router (adding #/) took it: the result says the URL it landed on.",
		InputSchema: inputSchema[NavigateInput](annotateNavigate),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes},
	}, s.navigate)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "browser_batch",
		Title: "Run a short sequence of actions",
		Description: "Run 1 to 8 actions in order on the leased tab under one deadline, e.g. fill a form and submit it. Every ref comes from the same observation (documentEpoch). " +
			"Give every step action.expected (text that is on the page once the step has worked): the batch stops at the first step that is not verified to have succeeded, and when a step before the last changes the document. " +
			"The user approves each step through this app before it runs; if the app cannot ask the user, batches are refused: then use browser_act for each step. " +
			"requestId works as for browser_act. The result lists each step's outcome and shows the page after the last step that ran.",
		InputSchema: inputSchema[BatchInput](annotateBatch),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes},
	}, s.batch)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "browser_read_page",
		Title: "Read a long page window by window",
		Description: "Read the whole leased page (or one region of it) in order, in windows of at most 100 elements and text fragments, when browser_observe is truncated. " +
			"Each window is an outline like browser_observe's, with refs usable in browser_act and region refs usable as rootRef here; when there is more, it ends with the continuation for the next window. " +
			"A continuation is single use and lasts 2 minutes; if the page changed along the way (STALE_TARGET), start again without one.",
		InputSchema: inputSchema[ReadPageInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.readPage)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "browser_frames",
		Title: "List the page's frames",
		Description: "List the frames of the leased tab (the page and its iframes), nested as in the page: each frame's id and origin, whether it is same-origin with the lease, cross-origin or opaque, and which is the main frame. " +
			"Metadata only: no frame's content is read. Cross-origin and opaque frames are painted black in browser_screenshot and cannot be read.",
		InputSchema: inputSchema[FramesInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.frames)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "browser_screenshot",
		Title: "Look at the page",
		Description: "Capture what the leased tab shows now (its visible part) as a JPEG image at most 1200 pixels wide, with a caption giving the documentEpoch, the viewport and its scroll position. The tab must be the one shown in its window (a background tab answers NOT_ACTIONABLE). " +
			"Every frame not provably of the lease's origin (cross-origin or opaque iframes such as ads and embeds) is painted black before the image leaves the browser; the caption says how many. " +
			"Use it to see layout or visual state that the outline does not show. It is for looking only: to click or type, use refs from browser_observe, never coordinates. " +
			"The image is returned only while the lease is still valid.",
		InputSchema: inputSchema[ScreenshotInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
	}, s.screenshot)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "browser_handoff",
		Title:       "Give the tab back",
		Description: "Give the tab back to the user: ends the lease (the ON badge goes away) and leaves the tab open as it is. Call it when you are done with a tab or need the user to take over.",
		InputSchema: inputSchema[HandoffInput](nil),
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: &no, DestructiveHint: &no},
	}, s.handoff)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

type instance struct {
	ID           string `json:"id"`
	Family       string `json:"family"`
	Brand        string `json:"brand"`
	Version      string `json:"version"`
	ProfileLabel string `json:"profileLabel"`
}

func (s *Server) list(ctx context.Context, req *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, any, error) {
	var b strings.Builder
	if in.InstanceID == "" {
		var list []instance
		if err := s.call(ctx, req.Session, readTimeout, "browser.instances", nil, &list); err != nil {
			return nil, nil, err
		}
		if len(list) == 0 {
			return text("No browser is connected to the broker. Ask the user to open Chrome with the DSH extension loaded (`broker status` shows what is connected), then call browser_list again."), nil, nil
		}
		fmt.Fprintf(&b, "%s connected:\n", plural(len(list), "browser", "browsers"))
		for _, in := range list {
			fmt.Fprintf(&b, "- instanceId=%s %s %s profile %q\n", in.ID, in.Brand, in.Version, in.ProfileLabel)
		}
		b.WriteString("Next: browser_list with an instanceId lists its tabs.\n")
		return text(b.String()), nil, nil
	}
	var tabs []browser.TabSummary
	se := s.session(req.Session)
	if err := s.call(ctx, req.Session, readTimeout, "browser.tabs", map[string]string{"sessionId": se.id, "instanceId": in.InstanceID}, &tabs); err != nil {
		return nil, nil, err
	}
	if len(tabs) == 0 {
		return text("This browser has no web (HTTP/HTTPS) tab that may be claimed. Ask the user to open the page to work on, then call browser_list again."), nil, nil
	}
	fmt.Fprintf(&b, "%s in instanceId=%s:\n", plural(len(tabs), "tab", "tabs"), in.InstanceID)
	for _, t := range tabs {
		fmt.Fprintf(&b, "- tab=%s %q %s\n", t.ID, t.Title, t.URL)
	}
	b.WriteString("Next: browser_claim with the instanceId and a tab.\n")
	return text(b.String()), nil, nil
}

func (s *Server) claim(ctx context.Context, req *mcp.CallToolRequest, in ClaimInput) (*mcp.CallToolResult, *ClaimOutput, error) {
	se := s.session(req.Session)
	var l browser.LeaseResult
	params := map[string]string{"sessionId": se.id, "instanceId": in.InstanceID, "tab": in.Tab}
	if err := s.call(ctx, req.Session, claimTimeout, "browser.claim", params, &l); err != nil {
		return nil, nil, err
	}
	out := &ClaimOutput{LeaseID: l.ID, Tab: l.Tab, InstanceID: l.InstanceID, Origin: l.Origin, Scope: l.Scope, ExpiresAt: l.ExpiresAt}
	scope := "it follows the tab wherever it navigates"
	if l.Scope == lease.ScopeOrigin {
		scope = "it ends if the tab leaves " + l.Origin
	}
	expires := time.UnixMilli(l.ExpiresAt).UTC()
	msg := fmt.Sprintf("leaseId=%s\ntab=%s origin=%s scope=%s (%s)\nexpiresAt=%d (%s, in %s; claim again after)\nNext: browser_observe with this leaseId.",
		l.ID, l.Tab, l.Origin, l.Scope, scope, l.ExpiresAt, expires.Format(time.RFC3339), time.Until(expires).Round(time.Second))
	return text(msg), out, nil
}

func (s *Server) observe(ctx context.Context, req *mcp.CallToolRequest, in ObserveInput) (*mcp.CallToolResult, any, error) {
	se := s.session(req.Session)
	params := map[string]any{"sessionId": se.id, "leaseId": in.LeaseID}
	if in.Query != nil {
		if strings.TrimSpace(in.Query.Name) == "" {
			return nil, nil, fmt.Errorf("INVALID_REQUEST: query.name must not be empty")
		}
		params["query"] = in.Query
	}
	if in.Frame != nil {
		params["frame"] = in.Frame
	}
	if in.RootRef != "" {
		params["rootRef"] = in.RootRef
	}
	var o browser.Observation
	if err := s.call(ctx, req.Session, readTimeout, "browser.observe", params, &o); err != nil {
		return nil, nil, err
	}
	se.remember(in.LeaseID, &o)
	if in.Query != nil || in.Frame != nil || in.RootRef != "" {
		return text(Outline(&o, in.LeaseID)), nil, nil
	}
	// The whole page comes with its child frames (broker.observe-frames.v1):
	// the same-origin ones read, the others listed.
	frames := o.Frames
	se.rememberFrames(in.LeaseID, frames)
	var b strings.Builder
	writeOutline(&b, &o, in.LeaseID)
	writeFrames(&b, frames)
	return text(b.String()), nil, nil
}

func (s *Server) act(ctx context.Context, req *mcp.CallToolRequest, in ActInput) (*mcp.CallToolResult, any, error) {
	se := s.session(req.Session)
	if err := checkAction(&in.Action); err != nil {
		return nil, nil, err
	}
	if in.RequestID == "" {
		in.RequestID = newRequestID()
	}
	// A ref of a frame read into the outline acts in that frame; the
	// answer says what changed since the agent last saw the page (or the
	// frame), small however big the page.
	before, f := se.actingOn(in.LeaseID, in.Action.Ref, in.DocumentEpoch, in.Frame)
	frameID := ""
	if f != nil {
		in.Frame, in.DocumentEpoch = frameSelector(f), f.Observation.DocumentEpoch
		frameID = f.ID
	}
	r := browser.ActionRequest{RequestID: in.RequestID, LeaseID: in.LeaseID, DocumentEpoch: in.DocumentEpoch, Action: in.Action, TimeoutMs: in.TimeoutMs, Frame: in.Frame}
	if before != nil {
		r.Since = before.Cursor
	}
	remember := func(o *browser.Observation) {
		if frameID != "" {
			se.rememberFrame(in.LeaseID, frameID, o)
		} else {
			se.remember(in.LeaseID, o)
		}
	}
	timeout := browser.DefaultActionTimeout
	if in.TimeoutMs != nil {
		timeout = time.Duration(*in.TimeoutMs) * time.Millisecond
	}
	var res browser.ActionResult
	if err := s.call(ctx, req.Session, timeout+actSlack, "browser.act", map[string]any{"sessionId": se.id, "request": r}, &res); err != nil {
		return nil, nil, withRequestID(err, in.RequestID)
	}
	if res.Change != nil {
		if now := applyChange(before, res.Change); now != nil {
			remember(now)
			return text(RenderAction(&res, &in.Action, in.LeaseID, before)), nil, nil
		}
		// Not a change of the page asked about (this broker never sends
		// one): show the whole page instead.
		params := map[string]any{"sessionId": se.id, "leaseId": in.LeaseID}
		if in.Frame != nil {
			params["frame"] = in.Frame
		}
		var o browser.Observation
		if err := s.call(ctx, req.Session, readTimeout, "browser.observe", params, &o); err != nil {
			return nil, nil, withRequestID(err, in.RequestID)
		}
		res.Change, res.Observation = nil, &o
	}
	remember(res.Observation)
	return text(RenderAction(&res, &in.Action, in.LeaseID, nil)), nil, nil
}

// applyChange is the observation a change gives from its baseline, or nil
// when the change is not one of base.
func applyChange(base *browser.Observation, d *browser.ObservationDelta) *browser.Observation {
	if base == nil || d.BaseCursor != base.Cursor {
		return nil
	}
	if t := d.Text; t != nil && (t.Start < 0 || t.DeleteCount < 0 || t.Start > len(base.Text)-t.DeleteCount) {
		return nil
	}
	nodes, text := d.Apply(base.Nodes, base.Text)
	return &browser.Observation{Format: "full", Cursor: d.Cursor, Tab: d.Tab, URL: d.URL, Title: d.Title,
		DocumentEpoch: d.DocumentEpoch, Revision: d.Revision, Nodes: nodes, Text: text, Truncated: d.Truncated, Scope: d.Scope}
}

// navigate opens a URL in the leased tab: it reads the tab's current
// document (the action is fenced by it) and navigates from there.
func (s *Server) navigate(ctx context.Context, req *mcp.CallToolRequest, in NavigateInput) (*mcp.CallToolResult, any, error) {
	se := s.session(req.Session)
	a := browser.Action{Kind: browser.ActNavigate, URL: in.URL}
	if in.ExpectedText != "" {
		a.Expected = &browser.Expected{Kind: browser.ExpectText, Text: in.ExpectedText}
	}
	if err := checkAction(&a); err != nil {
		return nil, nil, err
	}
	var now browser.Observation
	if err := s.call(ctx, req.Session, readTimeout, "browser.observe", map[string]any{"sessionId": se.id, "leaseId": in.LeaseID}, &now); err != nil {
		return nil, nil, err
	}
	return s.act(ctx, req, ActInput{LeaseID: in.LeaseID, DocumentEpoch: now.DocumentEpoch, Action: a, RequestID: in.RequestID, TimeoutMs: in.TimeoutMs})
}

func (s *Server) batch(ctx context.Context, req *mcp.CallToolRequest, in BatchInput) (*mcp.CallToolResult, any, error) {
	se := s.session(req.Session)
	if len(in.Steps) < 1 || len(in.Steps) > browser.MaxBatchSteps {
		return nil, nil, fmt.Errorf("INVALID_REQUEST: steps must hold 1 to %d steps", browser.MaxBatchSteps)
	}
	for i := range in.Steps {
		if err := checkAction(&in.Steps[i].Action); err != nil {
			return nil, nil, fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	if in.RequestID == "" {
		in.RequestID = newRequestID()
	}
	a := &approval{sess: se, leaseID: in.LeaseID, steps: in.Steps}
	approvalID := "approve-" + randomHex(8)
	s.mu.Lock()
	s.approvals[approvalID] = a
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.approvals, approvalID)
		s.mu.Unlock()
	}()
	r := browser.BatchRequest{RequestID: in.RequestID, LeaseID: in.LeaseID, DocumentEpoch: in.DocumentEpoch, Steps: in.Steps, TimeoutMs: in.TimeoutMs}
	var res browser.BatchResult
	if err := s.call(ctx, req.Session, browser.MaxBatchTimeout+actSlack, "browser.batch",
		map[string]any{"sessionId": se.id, "approvalId": approvalID, "request": r}, &res); err != nil {
		return nil, nil, withRequestID(err, in.RequestID)
	}
	se.remember(in.LeaseID, res.Observation)
	a.mu.Lock()
	denied := a.denied
	a.mu.Unlock()
	return text(RenderBatch(&res, in.Steps, in.LeaseID, denied)), nil, nil
}

func (s *Server) readPage(ctx context.Context, req *mcp.CallToolRequest, in ReadPageInput) (*mcp.CallToolResult, any, error) {
	se := s.session(req.Session)
	params := map[string]any{"sessionId": se.id, "leaseId": in.LeaseID}
	opts := map[string]any{}
	if in.RootRef != "" {
		opts["rootRef"] = in.RootRef
	}
	if in.Continuation != "" {
		opts["continuation"] = in.Continuation
	}
	if in.Frame != nil {
		opts["frame"] = in.Frame
	}
	if len(opts) > 0 {
		params["options"] = opts
	}
	var w browser.PageWindow
	if err := s.call(ctx, req.Session, readTimeout, "browser.readPage", params, &w); err != nil {
		return nil, nil, err
	}
	se.remember(in.LeaseID, &browser.Observation{Title: w.Title, URL: w.URL, Nodes: w.Nodes})
	return text(RenderWindow(&w, in.LeaseID)), nil, nil
}

func (s *Server) frames(ctx context.Context, req *mcp.CallToolRequest, in FramesInput) (*mcp.CallToolResult, any, error) {
	se := s.session(req.Session)
	var inv browser.FrameInventory
	if err := s.call(ctx, req.Session, readTimeout, "browser.frames", map[string]string{"sessionId": se.id, "leaseId": in.LeaseID}, &inv); err != nil {
		return nil, nil, err
	}
	return text(FrameOutline(&inv, in.LeaseID)), nil, nil
}

// screenshot captures the leased tab and returns the image only once
// browser.validateLease, on the connection that captured it, says the
// lease is still valid, and only if no handoff or revocation of the lease
// came in between.
func (s *Server) screenshot(ctx context.Context, req *mcp.CallToolRequest, in ScreenshotInput) (*mcp.CallToolResult, any, error) {
	se := s.session(req.Session)
	c, err := s.broker(ctx, req.Session)
	if err != nil {
		return nil, nil, err
	}
	ctx, done := se.holdCapture(ctx, in.LeaseID)
	defer done()
	params := map[string]string{"sessionId": se.id, "leaseId": in.LeaseID}
	var sh browser.Screenshot
	if err := s.callOn(ctx, c, readTimeout, "browser.capture", params, &sh); err != nil {
		return nil, nil, revoked(ctx, err)
	}
	res, err := ScreenshotResult(&sh, in.LeaseID)
	if err != nil {
		s.log.Error("unexpected broker answer", "method", "browser.capture", "err", err)
		return nil, nil, toolError("browser.capture", wire.Err(wire.CodeInternalError))
	}
	var v struct {
		Valid bool `json:"valid"`
	}
	if err := s.callOn(ctx, c, readTimeout, "browser.validateLease", params, &v); err != nil {
		return nil, nil, revoked(ctx, err)
	}
	if !v.Valid || errors.Is(context.Cause(ctx), errCaptureRevoked) {
		return nil, nil, toolError("browser.validateLease", wire.Err(wire.CodeLeaseRevoked))
	}
	return res, nil, nil
}

// revoked is the error of a capture's broker call: LEASE_REVOKED when the
// capture was revoked, else err.
func revoked(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errCaptureRevoked) {
		return toolError("browser.capture", wire.Err(wire.CodeLeaseRevoked))
	}
	return err
}

func (s *Server) handoff(ctx context.Context, req *mcp.CallToolRequest, in HandoffInput) (*mcp.CallToolResult, any, error) {
	se := s.session(req.Session)
	se.forget(in.LeaseID) // a screenshot not yet returned is not returned
	if err := s.call(ctx, req.Session, readTimeout, "browser.release", map[string]string{"sessionId": se.id, "leaseId": in.LeaseID}, nil); err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("Released leaseId=%s: the tab is the user's again and stays open as it is.", in.LeaseID)), nil, nil
}

// newRequestID returns a fresh action requestId.
func newRequestID() string { return "mcp-" + randomHex(12) }

// withRequestID adds the requestId to an action's tool error, so that the
// model can retry the same action.
func withRequestID(err error, requestID string) error {
	return fmt.Errorf("%w (requestId=%s)", err, requestID)
}

// checkAction checks what the schema cannot say: which fields each kind
// takes, and fills in an expectation's kind from its field. The broker
// checks again; this only gives a clearer answer.
func checkAction(a *browser.Action) error {
	fields := map[string]bool{"ref": a.Ref != "", "text": a.Text != nil, "key": a.Key != "", "shift": a.Shift != nil,
		"checked": a.Checked != nil, "deltaX": a.DeltaX != nil, "deltaY": a.DeltaY != nil, "url": a.URL != "", "option": a.Option != nil,
		"value": a.Value != nil, "modifiers": a.Modifiers != nil, "toRef": a.ToRef != "", "x": a.X != nil, "y": a.Y != nil}
	takes := map[string][]string{
		"click": {"ref"}, "fill": {"ref", "text"}, "type": {"ref", "text"}, "append": {"ref", "text"}, "press": {"ref", "key", "shift"},
		"check": {"ref", "checked"}, "select": {"ref", "option", "value"}, "scroll": {"ref", "deltaX", "deltaY"}, "wheel": {"ref", "deltaX", "deltaY"},
		"navigate": {"url"}, "dblclick": {"ref"}, "hover": {"ref"}, "chord": {"ref", "key", "modifiers"},
		"drag": {"ref", "toRef", "deltaX", "deltaY"}, "clickAt": {"ref", "x", "y"},
	}
	allowed, ok := takes[a.Kind]
	if !ok {
		return fmt.Errorf("INVALID_REQUEST: action.kind must be one of %s", strings.Join(actionKinds, ", "))
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if fields[f] && !slices.Contains(allowed, f) {
			return fmt.Errorf("INVALID_REQUEST: %s takes %s, not %s", a.Kind, strings.Join(allowed, ", "), f)
		}
	}
	need := func(f, what string) error {
		if !fields[f] {
			return fmt.Errorf("INVALID_REQUEST: %s needs action.%s: %s", a.Kind, f, what)
		}
		return nil
	}
	var err error
	switch a.Kind {
	case "fill", "type", "append":
		err = need("text", "the text")
	case "press":
		if !browser.NamedKeys[a.Key] {
			err = fmt.Errorf("INVALID_REQUEST: press needs action.key, one of %s", strings.Join(browser.NamedKeyList, ", "))
		}
	case "check":
		err = need("checked", "true to check, false to uncheck")
	case "select":
		if fields["option"] == fields["value"] {
			err = fmt.Errorf("INVALID_REQUEST: select needs action.option (the option's label) or action.value (its value), not both")
		}
	case "chord":
		if a.Modifiers == nil {
			a.Modifiers = []string{} // a plain character
		}
		if !browser.NamedKeys[a.Key] && !(utf8.RuneCountInString(a.Key) == 1 && browser.KeyCharacter(a.Key)) {
			err = fmt.Errorf("INVALID_REQUEST: chord needs action.key: one of %s, or one character", strings.Join(browser.NamedKeyList, ", "))
		} else if browser.NamedKeys[a.Key] && len(a.Modifiers) == 0 {
			err = fmt.Errorf("INVALID_REQUEST: a chord of a named key needs modifiers (or use press)")
		}
	case "drag":
		switch {
		case fields["toRef"] && (fields["deltaX"] || fields["deltaY"]):
			err = fmt.Errorf("INVALID_REQUEST: drag takes toRef or deltaX and deltaY, not both")
		case !fields["toRef"] && (!fields["deltaX"] || !fields["deltaY"]):
			err = fmt.Errorf("INVALID_REQUEST: drag needs action.toRef (the element to drop on) or deltaX and deltaY (CSS pixels)")
		case !fields["toRef"] && *a.DeltaX == 0 && *a.DeltaY == 0:
			err = fmt.Errorf("INVALID_REQUEST: drag needs deltaX or deltaY other than 0")
		}
	case "clickAt":
		if err = need("x", "CSS pixels from the element's left edge"); err == nil {
			err = need("y", "CSS pixels from the element's top edge")
		}
	case "scroll", "wheel":
		if err = need("deltaX", "CSS pixels (0 for none)"); err == nil {
			err = need("deltaY", "CSS pixels (0 for none)")
		}
		if err == nil && *a.DeltaX == 0 && *a.DeltaY == 0 {
			err = fmt.Errorf("INVALID_REQUEST: %s needs deltaX or deltaY other than 0", a.Kind)
		}
	case "navigate":
		err = need("url", "an http or https URL")
	}
	if err != nil {
		return err
	}
	if a.Ref == "" && a.Kind != "navigate" && a.Kind != "scroll" {
		return fmt.Errorf("INVALID_REQUEST: action.ref is required: a ref from browser_observe")
	}
	if e := a.Expected; e != nil {
		if e.Kind == "" {
			switch {
			case e.Value != nil:
				e.Kind = browser.ExpectValue
			case e.URL != "":
				e.Kind = browser.ExpectURL
			case e.State != "" || e.Ref != "":
				e.Kind = browser.ExpectState
			default:
				e.Kind = browser.ExpectText
			}
		}
		switch {
		case !slices.Contains(expectationKinds, e.Kind):
			return fmt.Errorf("INVALID_REQUEST: action.expected.kind must be one of %s", strings.Join(expectationKinds, ", "))
		case !browser.ExpectationAllowed(a.Kind, e.Kind):
			return fmt.Errorf("INVALID_REQUEST: %s cannot be checked by %s (only text or url after navigate; no value after check, scroll or wheel)", a.Kind, e.Kind)
		case e.Kind == browser.ExpectText && browser.Blank(e.Text):
			return fmt.Errorf("INVALID_REQUEST: action.expected is {kind:\"text\", text:\"…\"} with a non-empty text")
		case e.Kind == browser.ExpectValue && e.Value == nil:
			return fmt.Errorf("INVALID_REQUEST: action.expected {kind:\"value\"} needs value")
		case e.Kind == browser.ExpectURL && e.URL == "":
			return fmt.Errorf("INVALID_REQUEST: action.expected {kind:\"url\"} needs url")
		case e.Kind == browser.ExpectState && (e.Ref == "" || !slices.Contains(browser.ElementStates, e.State)):
			return fmt.Errorf("INVALID_REQUEST: action.expected {kind:\"state\"} needs ref and state, one of %s", strings.Join(browser.ElementStates, ", "))
		}
	}
	return nil
}
