package browser

// Screenshot is the value of browser.capture: one JPEG of the leased tab's
// visual viewport, with every visible frame branch that is not provably of
// the lease's origin painted over inside the extension before transfer.
type Screenshot struct {
	Tab           string    `json:"tab"`
	DocumentEpoch string    `json:"documentEpoch"`
	CapturedAt    int64     `json:"capturedAt"` // ms since the Unix epoch
	MimeType      string    `json:"mimeType"`   // image/jpeg
	Data          string    `json:"data"`       // base64, at most MaxScreenshotData characters
	Viewport      Viewport  `json:"viewport"`
	Redaction     Redaction `json:"redaction"`
}

// Viewport is the captured CSS visual viewport: its size and its offset in
// the document. The image is the viewport scaled by min(1, 1200/width).
type Viewport struct {
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	PageX  float64 `json:"pageX"`
	PageY  float64 `json:"pageY"`
}

// Redaction says what the image does not show.
type Redaction struct {
	Policy  string `json:"policy"`  // cross-origin-frames
	Frames  int    `json:"frames"`  // frames in the painted-over branches
	Regions int    `json:"regions"` // boxes painted over in the image (≤ frames)
}

// MaxScreenshotData bounds a screenshot's base64 characters; a larger one
// is QUEUE_FULL.
const MaxScreenshotData = 800000
