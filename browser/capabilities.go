package browser

// Kind is the provider kind of a browser: the MV3 extension, through
// nativehost. Its hello may leave the kind out (the reference's does).
const Kind = "browser"

// Family is the instance family every browser provider reports.
const Family = "chromium"

// Capabilities the broker offers clients in its welcome, in the
// reference's vocabulary. A name joins [Offered] in the change that makes
// its reference semantics true and its end-to-end test pass.
const (
	CapRuntime          = "runtime.v1"
	CapProviderAXRead   = "provider.ax-read.v1"
	CapProviderAXFind   = "provider.ax-find.v1"
	CapObserveQuery     = "observe.query.v1"
	CapJournalRecovery  = "journal.recovery.v1"
	CapRuntimeBatch     = "runtime.batch.v1"
	CapPersonalTabScope = "runtime.personal-tab-scope.v1"
	CapCheck            = "runtime.check.v1" // check: checkbox, switch
	CapRadio            = "runtime.radio.v1" // check: a native radio, checked:true
	CapWheel            = "runtime.wheel.v1" // wheel
	CapContentEditable  = "runtime.contenteditable-fill.v1"
	CapAppend           = "runtime.append.v1"
	CapElementState     = "runtime.element-state.v1"       // state expectations
	CapFrameSubtree     = "observe.frame-subtree.v1"       // observe with frame and rootRef
	CapCapturePublish   = "runtime.capture-publication.v1" // capture, then validateLease before publishing
	CapPageWindows      = "runtime.page.v1"                // readPage
	CapFrames           = "runtime.frames.v1"              // frames
	CapObserveFrame     = "observe.frame.v1"               // observe with frame
	CapFrameClick       = "runtime.frame-click.v1"         // act with frame: click, text expectation
	CapFrameQuery       = "observe.frame-query.v1"         // observe with frame and query
	CapFramePage        = "observe.frame-page.v1"          // readPage with frame
	// CapPersonalMode is offered only by a broker in personal access mode:
	// the extension then lists every HTTP(S) tab and grants tab-scoped
	// leases without asking.
	CapPersonalMode = "broker.personal-mode.v1"
)

// Capabilities beyond the reference, under our own names.
const (
	// CapFrameInputClient: a client that lists it in its hello's
	// capabilities may fill, type, append and press in a same-origin child
	// frame, besides the reference's click (runtime.frame-click.v1).
	CapFrameInputClient = "broker.frame-input.v1"
	// CapSelectOption: the select action chooses an option of a <select>,
	// by its label or by its value.
	CapSelectOption = "broker.select-option.v1"
	// The input vocabulary past the reference's: each action kind under
	// its own name.
	CapDblclick = "broker.dblclick.v1"  // dblclick
	CapHover    = "broker.hover.v1"     // hover
	CapKeyChord = "broker.key-chord.v1" // chord
	CapDrag     = "broker.drag.v1"      // drag
	CapClickAt  = "broker.click-at.v1"  // clickAt
	// CapCapturePaint: a capture also hides what paint effects (blur,
	// drop-shadow, backdrop-filter) carry of a foreign frame outside its
	// box, and refuses UNSUPPORTED_CAPABILITY where an SVG filter or a
	// reflection could put its pixels anywhere.
	CapCapturePaint = "broker.capture-paint-effects.v1"
	// CapActionDelta: a client that lists it may pass since (the cursor of
	// the observation it acted on) with browser.act, and is then answered
	// with change, what changed since, in place of the whole observation
	// when that is smaller.
	CapActionDelta = "broker.action-delta.v1"
	// CapObserveFrameOwners: a client that lists it gets frameOwners on a
	// full observation of the whole document (how many frame owner
	// elements the main document holds), so that it lists the frames
	// (browser.frames) only of a page that has some.
	CapObserveFrameOwners = "broker.observe-frame-owners.v1"
	// CapObserveFrames: a client that lists it gets a full observation of
	// the whole document with the page's child frames in it (Frames): every
	// listed child frame, the same-origin ones read (up to
	// MaxInlineFrames), all under the authority of one list taken with it.
	CapObserveFrames = "broker.observe-frames.v1"
)

// Offered lists what the broker offers every peer for the browser kind
// (CapPersonalMode is added in personal mode).
func Offered() []string {
	return []string{CapRuntime, CapProviderAXRead, CapProviderAXFind, CapObserveQuery, CapPersonalTabScope,
		CapJournalRecovery, CapRuntimeBatch, CapCheck, CapRadio, CapWheel, CapContentEditable, CapAppend, CapElementState,
		CapCapturePublish, CapPageWindows, CapFrames, CapObserveFrame, CapFrameClick, CapFrameQuery, CapFrameSubtree, CapFramePage,
		CapFrameInputClient, CapSelectOption, CapCapturePaint, CapActionDelta, CapObserveFrameOwners, CapObserveFrames, CapDblclick, CapHover, CapKeyChord, CapDrag, CapClickAt}
}

// Provider capabilities: what a browser provider advertises in its hello.
const (
	CapLeaseFencing   = "lease.fencing.v1"
	CapLeaseTabScope  = "lease.tab-scope.v1"
	CapAXRead         = "ax.read.v1"
	CapAXFind         = "ax.find.v1"
	CapInputNamedKeys = "input.named-keys.v1"

	// Optional provider methods, beyond the reference's names: a provider
	// without one gets UNSUPPORTED_CAPABILITY for what needs it, and is
	// sent nothing.
	CapAXPage     = "ax.page.v1"       // ax.page
	CapFramesList = "frames.list.v1"   // frames.list
	CapCapture    = "capture.v1"       // capture
	CapFrameRead  = "ax.read-frame.v1" // ax.read and ax.find with a frame
	CapFrameInput = "input.frame.v1"   // input.click, input.text, input.key with a frame
	// The fenced reads and inputs of the whole action vocabulary: dom.read
	// (an element's facts, which every action's checks and every value,
	// state and checked verification read), and the inputs scroll, wheel,
	// select and navigate.
	CapDOMRead     = "dom.read.v1"
	CapInputScroll = "input.scroll.v1"
	CapInputWheel  = "input.wheel.v1"
	CapInputSelect = "input.select.v1"
	CapNavigate    = "page.navigate.v1"
	// The pointer and keyboard vocabulary past the reference's: dom.hit (what
	// a point of the page would hit) and every pointer input's accept list;
	// input.click with count 2, input.hover and input.drag; input.key with
	// modifiers and single-character keys.
	CapDOMHit       = "dom.hit.v1"
	CapInputPointer = "input.pointer.v1"
	CapInputChord   = "input.chord.v1"
)

// MaxProviderAnswer bounds a browser provider's success response in bytes
// (the extension's cap, the reference's): a larger one is answered
// QUEUE_FULL instead.
const MaxProviderAnswer = 900_000

// Required is what a browser provider must advertise to be registered; one
// lacking any fails its hello with PROTOCOL_MISMATCH. These are the safety
// floor the runtime is built on (fencing tokens, lease scopes, bounded AX
// reads and searches): a provider without them could only be driven
// through a less safe path, which the broker never falls back to. They are
// the reference extension's, so its hello is accepted; a provider without
// dom.read.v1 gets no action (UNSUPPORTED_CAPABILITY): every action's
// checks and verifications read elements with it.
func Required() []string {
	return []string{CapLeaseFencing, CapLeaseTabScope, CapAXRead, CapAXFind, CapInputNamedKeys}
}
