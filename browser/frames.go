package browser

// FrameSelector names a child frame and the document the client saw in it,
// from browser.frames.
type FrameSelector struct {
	FrameID       string `json:"frameId" len:"1,128"`
	DocumentEpoch string `json:"documentEpoch" len:"1,512"`
}

// FrameInventory is the value of browser.frames: metadata of the leased
// tab's frames, never their content.
type FrameInventory struct {
	Tab           string  `json:"tab"`
	DocumentEpoch string  `json:"documentEpoch"` // of the main document
	Truncated     bool    `json:"truncated"`     // frames may exist that are not listed
	Frames        []Frame `json:"frames"`
}

// Frame is one frame of a FrameInventory.
type Frame struct {
	ID       string `json:"id"` // opaque, stable while the lease lasts
	ParentID string `json:"parentId,omitempty"`
	IsMain   bool   `json:"isMain"`
	// DocumentEpoch names the frame's current document, when known.
	DocumentEpoch string `json:"documentEpoch,omitempty"`
	// Origin is the frame's scheme://host[:port], when known and not opaque.
	Origin string `json:"origin,omitempty"`
	// OriginRelation compares the frame's origin with the lease's:
	// same-origin, cross-origin, or opaque (an opaque origin, or one that
	// cannot be read: the frame runs in another process).
	OriginRelation string `json:"originRelation"`
	// ContextStatus is known when the broker can see the frame's document,
	// unavailable when it cannot (an out-of-process frame).
	ContextStatus string `json:"contextStatus"`
}

// MaxFrames bounds the frames of an inventory, besides the main frame.
const MaxFrames = 256
