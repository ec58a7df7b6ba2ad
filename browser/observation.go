package browser

import "slices"

// MaxSnapshotSize bounds an observation's JSON (as the reference measures
// it: UTF-8, no HTML escaping). A larger one is refused QUEUE_FULL, as the
// reference refuses it; within the budgets of an observation that takes
// text full of characters JSON escapes.
const MaxSnapshotSize = 96 << 10

// ObservationDelta is browser.observe's answer to a cursor whose baseline
// is still known, when the changes are smaller than the page: apply it to
// the baseline's nodes and text to get the page now.
type ObservationDelta struct {
	Format         string      `json:"format"` // delta
	Cursor         string      `json:"cursor"`
	BaseCursor     string      `json:"baseCursor"`
	ResyncRequired bool        `json:"resyncRequired"` // false
	Tab            string      `json:"tab"`
	URL            string      `json:"url"`
	Title          string      `json:"title"`
	DocumentEpoch  string      `json:"documentEpoch"`
	Revision       int64       `json:"revision"`
	Truncated      bool        `json:"truncated"`
	Scope          Scope       `json:"scope"`
	Nodes          NodesDelta  `json:"nodes"`
	Text           *TextSplice `json:"text,omitempty"`
}

// NodesDelta changes the baseline's nodes: drop those in Remove, replace or
// append those in Upsert (by ID; new ones go at the end in Upsert's order),
// then, when Order is present, put the nodes in that order.
type NodesDelta struct {
	Upsert []NodeRef `json:"upsert"`
	Remove []string  `json:"remove"`
	Order  []string  `json:"order,omitempty"`
}

// TextSplice changes the baseline's text fragments: delete DeleteCount
// fragments at Start and insert Insert there.
type TextSplice struct {
	Start       int      `json:"start"`
	DeleteCount int      `json:"deleteCount"`
	Insert      []string `json:"insert"`
}

// Apply returns the nodes and text a delta describes, from its baseline's.
// Clients do this; the broker's tests use it to check every delta.
func (d *ObservationDelta) Apply(nodes []NodeRef, text []string) ([]NodeRef, []string) {
	gone := make(map[string]bool, len(d.Nodes.Remove))
	for _, id := range d.Nodes.Remove {
		gone[id] = true
	}
	up := make(map[string]NodeRef, len(d.Nodes.Upsert))
	for _, n := range d.Nodes.Upsert {
		up[n.ID] = n
	}
	var out []NodeRef
	have := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if gone[n.ID] {
			continue
		}
		if u, ok := up[n.ID]; ok {
			n = u
		}
		have[n.ID] = true
		out = append(out, n)
	}
	for _, n := range d.Nodes.Upsert {
		if !have[n.ID] {
			out = append(out, n)
		}
	}
	if d.Nodes.Order != nil {
		byID := make(map[string]NodeRef, len(out))
		for _, n := range out {
			byID[n.ID] = n
		}
		out = out[:0:0]
		for _, id := range d.Nodes.Order {
			out = append(out, byID[id])
		}
	}
	if d.Text != nil {
		text = slices.Concat(text[:d.Text.Start], d.Text.Insert, text[d.Text.Start+d.Text.DeleteCount:])
	}
	return out, text
}

// ControlRoles are the roles whose elements an observation shows as
// controls (with an editable field, however it is named): the elements a
// person acts on.
var ControlRoles = []string{"button", "link", "textbox", "searchbox", "combobox", "checkbox", "radio", "tab",
	"menuitem", "menuitemcheckbox", "menuitemradio", "switch", "option", "slider", "spinbutton"}

// Observation budgets.
const (
	MaxControls     = 120
	MaxRegions      = 24
	MaxNodeBytes    = 40 << 10
	MaxTextFragment = 240
	MaxTextBytes    = 32 << 10
	MaxNameLength   = 1000 // UTF-16 units; longer names are dropped (truncated)
	MaxValueLength  = 1000
)

// NodeRef is one element of an observation.
type NodeRef struct {
	ID       string  `json:"id"`
	Role     string  `json:"role"`
	Name     string  `json:"name"`
	Disabled bool    `json:"disabled"`
	Checked  any     `json:"checked,omitempty"` // true, false or "mixed"
	Editable bool    `json:"editable,omitempty"`
	Value    *string `json:"value,omitempty"`
	Kind     string  `json:"kind,omitempty"` // "region"
}

// Scope says what part of the page an observation covers.
type Scope struct {
	Kind    string `json:"kind"` // document, subtree, frame or query
	Query   *Query `json:"query,omitempty"`
	RootRef string `json:"rootRef,omitempty"`
	FrameID string `json:"frameId,omitempty"`
}

// Query is a literal accessible-name search, optionally by role.
type Query struct {
	Name string `json:"name" len:"1,1000" text:"nonblank"`
	Role string `json:"role,omitempty" len:",80" pattern:"^[A-Za-z][A-Za-z0-9]*$"`
}

// Observation is the value of browser.observe: a bounded projection of the
// page's accessibility tree.
type Observation struct {
	Format         string    `json:"format"`
	Cursor         string    `json:"cursor"`
	ResyncRequired bool      `json:"resyncRequired"`
	ResyncReason   string    `json:"resyncReason,omitempty"`
	Tab            string    `json:"tab"`
	URL            string    `json:"url"`
	Title          string    `json:"title"`
	DocumentEpoch  string    `json:"documentEpoch"`
	Revision       int64     `json:"revision"`
	Nodes          []NodeRef `json:"nodes"`
	Text           []string  `json:"text"`
	Truncated      bool      `json:"truncated"`
	Scope          Scope     `json:"scope"`
	// FrameOwners (ours, for a client that lists [CapObserveFrameOwners])
	// counts the frame owner elements (iframes and the like) of the main
	// document, on a full observation of the whole document when the
	// browser could tell: 0 means there is no child frame to list.
	FrameOwners *int `json:"frameOwners,omitempty"`
	// Frames (ours, for a client that lists [CapObserveFrames]) are the
	// page's child frames, on a full observation of the whole document
	// whose frames could be listed with it.
	Frames []InlineFrame `json:"frames,omitempty"`
}

// MaxInlineFrames bounds the same-origin child frames read into one
// observation (CapObserveFrames); the others are listed, to read with
// frame. With MaxFrames listed (each frame's document epoch and origin at
// most 512 bytes: the runtime refuses a provider's longer ones, so a frame
// takes at most about 1.2 KB), five observations of at most
// MaxSnapshotSize and the list fit one reply with room.
const MaxInlineFrames = 4

// InlineFrame is a child frame in an observation (CapObserveFrames): the
// frame as browser.frames lists it and, for a same-origin one, its
// observation (whose refs act with frame) or the code that refused its
// read. A same-origin frame with neither was not read: it has no document
// yet, or MaxInlineFrames were read before it.
type InlineFrame struct {
	Frame
	Observation *Observation `json:"observation,omitempty"`
	Code        string       `json:"code,omitempty"`
}

// ObserveParams is the params of browser.observe.
type ObserveParams struct {
	SessionID string `json:"sessionId" len:"1,256"`
	LeaseID   string `json:"leaseId" len:"1,256"`
	Cursor    string `json:"cursor,omitempty" len:",128"`
	// RootRef reads only the element it names and what is inside it (with
	// Query: searches there); a ref of the frame's document with Frame.
	RootRef string         `json:"rootRef,omitempty" len:"1,128"`
	Query   *Query         `json:"query,omitempty"`
	Frame   *FrameSelector `json:"frame,omitempty"`
}
