package browser

// Client methods of the browser.* namespace, and the request and event the
// broker sends a client.
const (
	MethodInstances      = "browser.instances"
	MethodTabs           = "browser.tabs"
	MethodClaim          = "browser.claim"
	MethodObserve        = "browser.observe"
	MethodReadPage       = "browser.readPage"
	MethodFrames         = "browser.frames"
	MethodCapture        = "browser.capture"
	MethodValidateLease  = "browser.validateLease"
	MethodAct            = "browser.act"
	MethodBatch          = "browser.batch"
	MethodRelease        = "browser.release"
	MethodReleaseSession = "browser.releaseSession"

	MethodApproveBatchStep = "browser.approveBatchStep" // broker → client
	EventLeaseRevoked      = "browser.lease-revoked"    // broker → client
)

// Provider methods (broker → extension) and provider events (extension →
// broker): the contract of protocol/PROVIDER.md.
const (
	ProviderTabsList    = "tabs.list"
	ProviderLeaseGrant  = "lease.grant"
	ProviderLeaseRevoke = "lease.revoke"
	ProviderAXRead      = "ax.read"
	ProviderAXFind      = "ax.find"
	ProviderAXPage      = "ax.page"
	ProviderFramesList  = "frames.list"
	ProviderCapture     = "capture"
	ProviderInputClick  = "input.click"
	ProviderInputText   = "input.text"
	ProviderInputKey    = "input.key"
	ProviderInputWheel  = "input.wheel"
	ProviderInputScroll = "input.scroll"
	ProviderInputSelect = "input.select"
	ProviderInputHover  = "input.hover"
	ProviderInputDrag   = "input.drag"
	ProviderDOMRead     = "dom.read"
	ProviderDOMHit      = "dom.hit"
	ProviderNavigate    = "page.navigate"
	ProviderCDP         = "cdp"

	ProviderEventLeaseRevoked = "lease.revoked"
	ProviderEventPageChanged  = "page.changed"
)
