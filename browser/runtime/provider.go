package runtime

// The provider contract (protocol/PROVIDER.md) as typed calls: one function
// per provider method, named after it, sends its params and decodes its
// answer. Nothing else in the runtime calls Provider.Call, so this file is
// the whole of what the runtime asks of a browser.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/lease"
)

// errProvider is the category of a provider answer that breaks the
// contract (malformed or inconsistent). The broker answers the client
// INTERNAL_ERROR and logs the cause.
var errProvider = errors.New("the browser extension broke the provider contract")

// providerErr wraps a contract violation of method with its cause.
func providerErr(method string, cause any) error {
	return fmt.Errorf("%w: %s: %v", errProvider, method, cause)
}

// Bounds of what a provider names: a document epoch is at most what a
// client may send back (browser.act's documentEpoch), a frame's origin at
// most maxOrigin bytes (a host name is at most 253). They also bound what
// an observation with its frames takes (browser.MaxInlineFrames).
const (
	maxEpoch  = 512
	maxOrigin = 512
)

// epochOK tells whether a provider's document epoch is one a client can
// use.
func epochOK(e string) bool { return e != "" && len(e) <= maxEpoch }

// call sends one provider method and decodes its answer into T.
func call[T any](ctx context.Context, prov Provider, method string, params any) (*T, error) {
	raw, err := prov.Call(ctx, method, params)
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, providerErr(method, err)
	}
	return &v, nil
}

// leaseParams is the params of a provider method that names only a lease.
type leaseParams struct {
	Lease *lease.Lease `json:"lease"`
}

// requestParams is the params of a provider method with a request.
type requestParams[T any] struct {
	Lease   *lease.Lease `json:"lease"`
	Request T            `json:"request"`
}

// frameDocument names a child frame's current document to the provider.
type frameDocument struct {
	FrameID  string `json:"frameId"`
	LoaderID string `json:"loaderId"`
}

// callTabsList lists the instance's tabs, within ProviderTimeout.
func callTabsList(ctx context.Context, prov Provider) ([]browser.TabSummary, error) {
	raw, err := prov.CallWithin(ctx, ProviderTimeout, browser.ProviderTabsList, nil) // {}, without encoding/json
	if err != nil {
		return nil, err
	}
	tabs, err := decodeTabs(raw)
	if err != nil {
		return nil, providerErr(browser.ProviderTabsList, err)
	}
	return tabs, nil
}

// grantParams is the params of lease.grant: the lease, and who asks (for
// the owner's approval window).
type grantParams struct {
	Lease  *lease.Lease `json:"lease"`
	Client grantClient  `json:"client"`
}

type grantClient struct {
	Label string `json:"label"`
}

// callLeaseGrant asks the provider to gate a tab for a lease (in
// restricted mode, after the owner approves).
func callLeaseGrant(ctx context.Context, prov Provider, l *lease.Lease, label string) (*grantResult, error) {
	g, err := call[grantResult](ctx, prov, browser.ProviderLeaseGrant, grantParams{Lease: l, Client: grantClient{Label: label}})
	if err != nil {
		return nil, err
	}
	if !g.Granted || !epochOK(g.DocumentEpoch) {
		return nil, providerErr(browser.ProviderLeaseGrant, "a grant without granted:true and a document epoch of 1 to 512 bytes")
	}
	return g, nil
}

// callLeaseRevoke drops a lease's gate.
func callLeaseRevoke(ctx context.Context, prov Provider, l *lease.Lease) error {
	_, err := prov.Call(ctx, browser.ProviderLeaseRevoke, leaseParams{l})
	return err
}

// axRequest is the request of ax.read (Name empty) and ax.find: of the
// document, or from the element BackendNodeID.
type axRequest struct {
	Name          string         `json:"name,omitempty"`
	Role          string         `json:"role,omitempty"`
	BackendNodeID int64          `json:"backendNodeId,omitempty"`
	Frame         *frameDocument `json:"frame,omitempty"`
}

// callAX reads the page's AX nodes (ax.read), or the literal matches of a
// query (ax.find), in the main document or a child frame's, and answers
// what an observation shows of them (Project decodes the answer).
func callAX(ctx context.Context, prov Provider, l *lease.Lease, req axRequest) (*Projection, error) {
	method := browser.ProviderAXRead
	if req.Name != "" {
		method = browser.ProviderAXFind
	}
	raw, err := prov.Call(ctx, method, requestParams[axRequest]{l, req})
	if err != nil {
		return nil, err
	}
	read, err := Project(raw, req.Name != "")
	if err != nil {
		return nil, providerErr(method, err)
	}
	if !epochOK(read.DocumentEpoch) {
		return nil, providerErr(method, "no document epoch of 1 to 512 bytes")
	}
	return read, nil
}

// pageRequest is the request of ax.page.
type pageRequest struct {
	MaxNodes      int            `json:"maxNodes"`
	Frame         *frameDocument `json:"frame,omitempty"`
	BackendNodeID int64          `json:"backendNodeId,omitempty"`
	After         []string       `json:"after,omitempty"`
}

// callAXPage reads one window of the page, depth-first from a root or
// after a chain of AX node IDs.
func callAXPage(ctx context.Context, prov Provider, l *lease.Lease, req pageRequest) (*windowRead, error) {
	read, err := call[windowRead](ctx, prov, browser.ProviderAXPage, requestParams[pageRequest]{l, req})
	if err != nil {
		return nil, err
	}
	if !epochOK(read.DocumentEpoch) {
		return nil, providerErr(browser.ProviderAXPage, "no document epoch of 1 to 512 bytes")
	}
	return read, nil
}

// callFramesList lists the tab's frames.
func callFramesList(ctx context.Context, prov Provider, l *lease.Lease) (*sourceFrames, error) {
	return call[sourceFrames](ctx, prov, browser.ProviderFramesList, leaseParams{l})
}

// callCapture screenshots the viewport, redacted in the extension.
func callCapture(ctx context.Context, prov Provider, l *lease.Lease) (*sourceScreenshot, error) {
	return call[sourceScreenshot](ctx, prov, browser.ProviderCapture, leaseParams{l})
}

// inputTarget is the element an input acts on, with the identity it had
// when observed: the provider re-checks it right before the input.
type inputTarget struct {
	BackendNodeID int64  `json:"backendNodeId"`
	Role          string `json:"role"`
	Name          string `json:"name"`
}

// inputCommand is the request of the input methods (PROVIDER.md): every one
// names the document and (but a scroll of the document) the target;
// input.click takes X, Y (and ExpectChecked, the checked state a check's
// click must toggle; Count 2 for a double-click), input.wheel X, Y and the
// deltas, input.hover X, Y, input.drag X, Y, ToX, ToY (and To, the element
// it drops on), input.text Text and Mode (and for an append the Prefix the
// value must still be), input.key Key and Shift, or Modifiers (and Guard:
// keep the browser from acting on the key outside the page), input.scroll
// the deltas, input.select Option. Accept lists what the point of a
// pointer input may hit (dom.hit's relations).
type inputCommand struct {
	DocumentEpoch string         `json:"documentEpoch"`
	Target        *inputTarget   `json:"target,omitempty"`
	Frame         *frameDocument `json:"frame,omitempty"`
	X             *float64       `json:"x,omitempty"`
	Y             *float64       `json:"y,omitempty"`
	ExpectChecked any            `json:"expectChecked,omitempty"`
	DeltaX        *int           `json:"deltaX,omitempty"`
	DeltaY        *int           `json:"deltaY,omitempty"`
	Text          *string        `json:"text,omitempty"`
	Mode          string         `json:"mode,omitempty"`
	Prefix        *string        `json:"prefix,omitempty"`
	Key           string         `json:"key,omitempty"`
	Shift         bool           `json:"shift,omitempty"`
	Modifiers     []string       `json:"modifiers,omitzero"` // a chord's, [] too
	Guard         bool           `json:"guard,omitempty"`
	Option        *optionChoice  `json:"option,omitempty"`
	Accept        []string       `json:"accept,omitempty"`
	Count         int            `json:"count,omitempty"`
	ToX           *float64       `json:"toX,omitempty"`
	ToY           *float64       `json:"toY,omitempty"`
	To            *inputTarget   `json:"to,omitempty"`
}

// optionChoice names the option of a <select> to choose, by its index and
// the label it had when the broker read it, and for a choice by value the
// value it must have.
type optionChoice struct {
	Index int     `json:"index"`
	Label string  `json:"label"`
	Value *string `json:"value,omitempty"`
}

// callInput dispatches one fenced input (input.click, input.text, input.key,
// input.wheel, input.scroll, input.select, input.hover or input.drag). An error of the refusal codes
// of PROVIDER.md means nothing was dispatched; any other may have come
// after the input.
func callInput(ctx context.Context, prov Provider, method string, l *lease.Lease, cmd inputCommand) error {
	_, err := prov.Call(ctx, method, requestParams[inputCommand]{l, cmd})
	return err
}

// domRequest is the request of dom.read: an element (BackendNodeID), or
// without one the document, of the document DocumentEpoch names.
type domRequest struct {
	DocumentEpoch string         `json:"documentEpoch"`
	BackendNodeID int64          `json:"backendNodeId,omitempty"`
	Frame         *frameDocument `json:"frame,omitempty"`
}

// callDOMRead reads the facts of an element, or of the document's scroller.
func callDOMRead(ctx context.Context, prov Provider, l *lease.Lease, req domRequest) (*domFacts, error) {
	f, err := call[domFacts](ctx, prov, browser.ProviderDOMRead, requestParams[domRequest]{l, req})
	if err != nil {
		return nil, err
	}
	if f.Found && f.Scroll == nil {
		return nil, providerErr(browser.ProviderDOMRead, "facts without a scroll position")
	}
	return f, nil
}

// navigateRequest is the request of page.navigate.
type navigateRequest struct {
	DocumentEpoch string `json:"documentEpoch"`
	URL           string `json:"url"`
}

// navigation is a provider's answer to page.navigate: the URL as the
// browser writes it, and the loader of the new document (none for a
// navigation within the document).
type navigation struct {
	URL      string `json:"url"`
	LoaderID string `json:"loaderId"`
}

// callNavigate sends the tab to a URL. NAVIGATION_FAILED comes after the
// request was sent; the other refusal codes mean it was not.
func callNavigate(ctx context.Context, prov Provider, l *lease.Lease, req navigateRequest) (*navigation, error) {
	n, err := call[navigation](ctx, prov, browser.ProviderNavigate, requestParams[navigateRequest]{l, req})
	if err != nil {
		return nil, err
	}
	if n.URL == "" {
		return nil, providerErr(browser.ProviderNavigate, "no URL")
	}
	return n, nil
}

// cdpParams is the params of cdp: one allowlisted CDP command.
type cdpParams struct {
	Lease  *lease.Lease `json:"lease"`
	Method string       `json:"method"`
	Params any          `json:"params"`
}

// callCDP sends one allowlisted CDP command on the leased tab.
func callCDP(ctx context.Context, prov Provider, l *lease.Lease, method string, params any) (json.RawMessage, error) {
	return prov.Call(ctx, browser.ProviderCDP, cdpParams{l, method, params})
}

// sourceScreenshot is a provider's answer to capture (PROVIDER.md).
type sourceScreenshot struct {
	DocumentEpoch string            `json:"documentEpoch"`
	URL           string            `json:"url"`
	CapturedAt    int64             `json:"capturedAt"`
	MimeType      string            `json:"mimeType"`
	Data          string            `json:"data"`
	Viewport      browser.Viewport  `json:"viewport"`
	Redaction     browser.Redaction `json:"redaction"`
}

type grantResult struct {
	Granted       bool   `json:"granted"`
	DocumentEpoch string `json:"documentEpoch"`
	URL           string `json:"url"`
	Title         string `json:"title"`
}

// sourceFrames is a provider's answer to frames.list (PROVIDER.md): the main
// frame first, then parents before children.
type sourceFrames struct {
	DocumentEpoch string        `json:"documentEpoch"`
	URL           string        `json:"url"`
	Truncated     bool          `json:"truncated"`
	Frames        []sourceFrame `json:"frames"`
}

type sourceFrame struct {
	FrameID  string `json:"frameId"`
	ParentID string `json:"parentId"`
	LoaderID string `json:"loaderId"`
	Origin   string `json:"origin"`
	Local    bool   `json:"local"` // the provider can see the frame's document
}

// document names the frame's current document to the provider.
func (f sourceFrame) document() *frameDocument {
	return &frameDocument{FrameID: f.FrameID, LoaderID: f.LoaderID}
}

// axRead is a provider's answer to ax.read and ax.find (PROVIDER.md).
type axRead struct {
	DocumentEpoch string   `json:"documentEpoch"`
	URL           string   `json:"url"`
	Title         string   `json:"title"`
	Truncated     bool     `json:"truncated"`
	Nodes         []axNode `json:"nodes"`
	FrameOwners   *int     `json:"frameOwners"` // of the document a whole read read, when the provider could tell
}

type axNode struct {
	AXID          string  `json:"axId"`
	ParentAXID    string  `json:"parentAxId"` // the node it was walked from (ax.page), or its nearest returned ancestor
	BackendNodeID int64   `json:"backendNodeId"`
	Role          string  `json:"role"`
	Name          string  `json:"name"`
	Description   string  `json:"description"` // a clickable element's, when it has no name
	Value         *string `json:"value"`
	Ignored       bool    `json:"ignored"`
	Props         axProps `json:"props"`
}

type axProps struct {
	Disabled  bool   `json:"disabled"`
	Focusable bool   `json:"focusable"`
	Editable  string `json:"editable"`
	Checked   string `json:"checked"`
	Hidden    bool   `json:"hidden"`
	Clickable bool   `json:"clickable"` // clickable by the page's own doing (PROVIDER.md)
}

// domFacts is a provider's answer to dom.read (PROVIDER.md). A password's
// value is never there.
type domFacts struct {
	Found         bool                    `json:"found"` // false: the node no longer exists
	Connected     bool                    `json:"connected"`
	SameDocument  bool                    `json:"sameDocument"`
	Document      bool                    `json:"document"` // the facts of the document's scroller
	Tag           string                  `json:"tag"`
	Type          string                  `json:"type"`     // an input's type
	Role          string                  `json:"role"`     // the role attribute
	Editable      string                  `json:"editable"` // input, textarea, host or ""
	Password      bool                    `json:"password"`
	ReadOnly      bool                    `json:"readOnly"`
	Multiline     bool                    `json:"multiline"`
	Focused       bool                    `json:"focused"`
	Native        string                  `json:"native"` // checkbox, radio or ""
	MaxLength     int                     `json:"maxLength"`
	Disabled      bool                    `json:"disabled"`      // :disabled, or inert or aria-disabled within 64 ancestors
	DisabledKnown bool                    `json:"disabledKnown"` // the ancestors were all seen (at most 64)
	EnabledState  bool                    `json:"enabledState"`
	Checked       any                     `json:"checked"` // true, false, "mixed", or absent
	HostBounded   bool                    `json:"hostBounded"`
	Value         *string                 `json:"value"`
	Visible       bool                    `json:"visible"`
	Scroll        *browser.ScrollPosition `json:"scroll"`
	Select        *selectFacts            `json:"select"`
}

type selectFacts struct {
	Multiple  bool          `json:"multiple"`
	Truncated bool          `json:"truncated"`
	Options   []optionFacts `json:"options"`
}

type optionFacts struct {
	Label    string `json:"label"`
	Value    string `json:"value"`
	Selected bool   `json:"selected"`
	Disabled bool   `json:"disabled"`
}

// windowRead is a provider's answer to ax.page (PROVIDER.md).
type windowRead struct {
	DocumentEpoch string       `json:"documentEpoch"`
	URL           string       `json:"url"`
	Title         string       `json:"title"`
	Truncated     bool         `json:"truncated"` // incomplete
	Nodes         []windowNode `json:"nodes"`
	Resume        []string     `json:"resume"`
}

type windowNode struct {
	axNode
}

// hitRequest is the request of dom.hit: what an input at (X, Y), viewport
// CSS pixels, would hit, relative to the element BackendNodeID of the
// document DocumentEpoch names.
type hitRequest struct {
	DocumentEpoch string         `json:"documentEpoch"`
	BackendNodeID int64          `json:"backendNodeId"`
	X             float64        `json:"x"`
	Y             float64        `json:"y"`
	Frame         *frameDocument `json:"frame,omitempty"`
}

// callDOMHit asks what an input at a point would hit.
func callDOMHit(ctx context.Context, prov Provider, l *lease.Lease, req hitRequest) (*hitFacts, error) {
	h, err := call[hitFacts](ctx, prov, browser.ProviderDOMHit, requestParams[hitRequest]{l, req})
	if err != nil {
		return nil, err
	}
	switch h.Relation {
	case "target", "inside", "label", "outside":
		return h, nil
	}
	return nil, providerErr(browser.ProviderDOMHit, "relation "+h.Relation)
}
