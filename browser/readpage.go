package browser

import "time"

// Page window budgets.
const (
	MaxWindowEntries = 100      // elements and text fragments per window
	MaxWindowBytes   = 16 << 10 // of entries per window
	MaxWindowRegions = 24
	MaxTraversals    = 8 // live continuations per lease
	ContinuationTTL  = 2 * time.Minute
)

// PageWindow is the value of browser.readPage: one window of a depth-first
// reading of the page (or of a region), and how to read on.
type PageWindow struct {
	Tab           string    `json:"tab"`
	URL           string    `json:"url"`
	Title         string    `json:"title"`
	DocumentEpoch string    `json:"documentEpoch"`
	Revision      int64     `json:"revision"`
	Nodes         []NodeRef `json:"nodes"`
	Text          []string  `json:"text"`
	Truncated     bool      `json:"truncated"` // continuation or incomplete
	Scope         Scope     `json:"scope"`
	Page          PageInfo  `json:"page"`
}

// PageInfo places a window in its reading.
type PageInfo struct {
	Index      int  `json:"index"` // 0 for the first window
	Incomplete bool `json:"incomplete"`
	// Continuation reads the next window: single use, for 2 minutes, on
	// this lease and document only. Absent after the last window.
	Continuation string `json:"continuation,omitempty"`
}

// ReadPageParams is the params of browser.readPage.
type ReadPageParams struct {
	SessionID string           `json:"sessionId" len:"1,256"`
	LeaseID   string           `json:"leaseId" len:"1,256"`
	Options   *ReadPageOptions `json:"options,omitempty"`
}

// ReadPageOptions says where a page window starts.
type ReadPageOptions struct {
	RootRef      string         `json:"rootRef,omitempty" len:",128"`
	Continuation string         `json:"continuation,omitempty" len:",128"`
	Frame        *FrameSelector `json:"frame,omitempty"` // a same-origin child frame's document
}
