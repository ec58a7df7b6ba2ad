package mcpserver

import (
	"errors"
	"fmt"

	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// hints say, for each registry code, what a model should do next. The
// wire carries only the code; this text is ours.
var hints = map[wire.Code]string{
	wire.CodeStaleTarget:           "the page changed: call browser_observe again and use the new refs and documentEpoch",
	wire.CodePolicyDenied:          "the user or policy refused: ask the user",
	wire.CodeLeaseRevoked:          "the lease ended (Stop, navigation away, release or expiry): claim the tab again",
	wire.CodeNotActionable:         "the element is covered, hidden or disabled: observe again, then dismiss whatever covers it, wait until it is enabled, or choose another element",
	wire.CodeRecoveryRequired:      "this request may already have run: check the page (observe) before trying again with a new requestId",
	wire.CodeConnectionLost:        "the browser or broker is gone: ask the user to check that the browser is open with the DSH extension and the broker is running (`broker status`), then list and claim again",
	wire.CodeLeaseBusy:             "another agent holds this tab: choose another tab or ask the user",
	wire.CodeUserStopped:           "the user pressed Stop: do not continue; ask the user",
	wire.CodeCancelled:             "the request was cancelled before it finished: observe to see the page as it is now",
	wire.CodeDeadlineExceeded:      "it did not finish in time: observe to see what happened; to retry the same action reuse its requestId",
	wire.CodeQueueFull:             "the broker is busy: wait a moment and try again",
	wire.CodeBrokerBusy:            "the broker is busy: wait a moment and try again",
	wire.CodeAmbiguousTarget:       "more than one element matches: observe again and pick one ref",
	wire.CodeRequestIDConflict:     "this requestId was already used for a different action: use a new requestId for a new action",
	wire.CodeJournalFull:           "the broker's action journal is full: wait a while, or ask the user",
	wire.CodeJournalUnavailable:    "the broker refuses actions until its journal is repaired (reading still works): ask the user to run `broker status`",
	wire.CodeInvalidRequest:        "the broker refused the arguments: check leaseId, documentEpoch, the ref and the action's fields (a ref from a frame needs frame, with the frame's documentEpoch)",
	wire.CodeUnsupportedCapability: "this browser or broker cannot do that: ask the user to update the extension and the broker",
	wire.CodeProtocolMismatch:      "the broker and `broker mcp` do not match: ask the user to update them together",
	wire.CodeNavigationFailed:      "the navigation failed: observe the page and decide again",
	wire.CodeVisionUnavailable:     "screenshots are not available here: work from browser_observe",
	wire.CodeBrokerStateUnsafe:     "the broker refuses to work in its current state: ask the user to run `broker status`",
	wire.CodeInternalError:         "the broker or browser failed unexpectedly: observe the page and try again; if it keeps happening ask the user to run `broker status`",
	wire.CodeAdmissionPending:      "the broker waits for the user to allow this program in the browser's admission window: ask the user to click Allow, then call this tool again",
	wire.CodeAdmissionDenied:       "the user refused this program's connection to the broker: do not retry; ask the user",
}

// methodHints replace hints for the broker methods whose refusals mean
// something else than an action's, by method.
var methodHints = map[string]map[wire.Code]string{
	"browser.readPage": {
		wire.CodeStaleTarget: "the continuation is used up, expired or from another reading, or the page changed along the way: call browser_read_page again without continuation (or a rootRef from a newer window)",
		wire.CodeQueueFull:   "too many readings are open on this lease: finish one (read to its last window) or wait 2 minutes",
	},
	"browser.capture": {
		wire.CodeStaleTarget:           "the page kept changing while it was captured: wait a moment and call browser_screenshot again",
		wire.CodeUnsupportedCapability: "this page cannot be captured safely here (it is pinch-zoomed, it reflects or SVG-filters a cross-origin frame, or the browser or extension cannot capture): work from browser_observe",
		wire.CodeQueueFull:             "the screenshot is too large to send, or too many are in flight: work from browser_observe",
		wire.CodeNotActionable:         "the tab is not shown (another tab is in front, or its window is minimized) and a hidden tab cannot be captured: ask the user to bring it to the front, or work from browser_observe",
		wire.CodeDeadlineExceeded:      "the capture did not finish in time: try once more, else work from browser_observe",
	},
}

// Hint returns what a model should do after a refusal with code.
func Hint(code wire.Code) string {
	if h, ok := hints[code]; ok {
		return h
	}
	return "the broker refused the request; observe the page, and ask the user if it keeps happening"
}

// HintFor returns what a model should do after a refusal of method with
// code: the method's own hint, else [Hint].
func HintFor(method string, code wire.Code) string {
	if h, ok := methodHints[method][code]; ok {
		return h
	}
	return Hint(code)
}

// codeText is the tool error text for a refusal of method: the code, then
// the hint.
func codeText(method string, code wire.Code) string {
	return string(code) + ": " + HintFor(method, code) + "."
}

// toolError turns the error of a broker call of method into the error a
// tool returns; the SDK sends its text as the tool result with isError set.
func toolError(method string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errNotRunning) {
		return err
	}
	if _, ok := errors.AsType[*wire.Error](err); !ok {
		// A local failure (the caller's deadline, a cancelled MCP request).
		code := rpc.CodeOf(err)
		if code == wire.CodeInternalError {
			return fmt.Errorf("INTERNAL_ERROR: %v", err)
		}
		return errors.New(codeText(method, code))
	}
	return errors.New(codeText(method, rpc.CodeOf(err)))
}

// errNotRunning is the tool error when the broker cannot be reached.
var errNotRunning = errors.New("the DSH broker is not running or not reachable")

// notRunning explains how to start the broker.
func notRunning(cause error) error {
	return fmt.Errorf("%w. Ask the user to start it: `broker serve`, or `systemctl --user start broker.socket` where it is installed as a service; then call this tool again. (%v)", errNotRunning, cause)
}
