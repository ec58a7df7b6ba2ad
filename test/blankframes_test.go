package test

import (
	"fmt"
	"testing"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
	"github.com/dsh-browser/broker/wire"
)

// TestE2EBlankFrames: an editor in an about:blank frame the page wrote, and
// a srcdoc frame, are same-origin frames — Chromium reports their origin
// as "://", so the extension proves the origin their documents have — and
// are read and acted in like any; a sandboxed srcdoc frame stays opaque.
func TestE2EBlankFrames(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/blankframes")
	inv := frameList(t, s, p.lease.ID)
	if len(inv.Frames) != 4 {
		t.Fatalf("frames %+v, want the page and three", inv.Frames)
	}
	blank, src, sandboxed := inv.Frames[1], inv.Frames[2], inv.Frames[3]
	for _, f := range []struct {
		name, relation string
		ok             bool
	}{{"blank", blank.OriginRelation, blank.Origin == s.Pages.Origin()}, {"srcdoc", src.OriginRelation, src.Origin == s.Pages.Origin()}} {
		if f.relation != "same-origin" || !f.ok {
			t.Fatalf("the %s frame: %+v", f.name, inv.Frames)
		}
	}
	if sandboxed.OriginRelation != "opaque" {
		t.Fatalf("the sandboxed frame: %+v", sandboxed)
	}
	selector := func(id, epoch string) map[string]any { return map[string]any{"frameId": id, "documentEpoch": epoch} }

	// The editor: read, then filled in its frame.
	o, raw, err := p.observeWith(map[string]any{"frame": selector(blank.ID, blank.DocumentEpoch)})
	if err != nil {
		t.Fatalf("observe the blank frame: %s %v", raw, err)
	}
	editor := refOf(t, o, "textbox", "Rich text")
	p.obs = o
	r := p.act(map[string]any{"kind": "fill", "ref": editor, "text": "Written by an agent"}, "frame", selector(blank.ID, blank.DocumentEpoch))
	succeeded(t, "fill the blank frame's editor", r, "observed")
	if v := eval[string](p, "document.getElementById('blank').contentDocument.getElementById('body').textContent"); v != "Written by an agent" {
		t.Fatalf("the editor holds %q", v)
	}

	// The srcdoc frame: a click, verified by its text.
	o, raw, err = p.observeWith(map[string]any{"frame": selector(src.ID, src.DocumentEpoch)})
	if err != nil {
		t.Fatalf("observe the srcdoc frame: %s %v", raw, err)
	}
	p.obs = o
	r = p.act(map[string]any{"kind": "click", "ref": refOf(t, o, "button", "Inside srcdoc"), "expected": map[string]any{"kind": "text", "text": "Clicked inside"}},
		"frame", selector(src.ID, src.DocumentEpoch))
	succeeded(t, "click in the srcdoc frame", r, "observed")

	// The sandboxed frame is out of bounds.
	if _, _, err := p.observeWith(map[string]any{"frame": selector(sandboxed.ID, "x:y")}); rpc.CodeOf(err) != wire.CodePolicyDenied {
		t.Fatalf("observe the sandboxed frame: %v", err)
	}
}

// TestE2EBlankFrameOfAnotherOrigin: an about:blank frame made by a frame of
// another origin (of the same site, so in the page's process and in its
// frame tree) has that origin: it is listed as cross-origin, and its
// content is refused, although Chromium reports its origin as "://" like
// the page's own blank frames.
func TestE2EBlankFrameOfAnotherOrigin(t *testing.T) {
	t.Parallel()
	s := stack.Start(t, "--access-mode=personal")
	p := openPage(t, s, "/frames")
	other := s.Pages.Other().Origin()
	// The other origin's frame writes a blank frame of its own, through a
	// world of that frame (its script is the frame's document's: the blank
	// frame takes that document's origin).
	tab := s.Browser.TabIDOf(t, p.target)
	worker := s.Browser.ServiceWorker(t, install.PinnedExtensionID)
	chromium.Eval[bool](t, s.Browser, worker, fmt.Sprintf(`(async () => {
		const t = { tabId: %d };
		const { frameTree } = await chrome.debugger.sendCommand(t, 'Page.getFrameTree');
		const cross = frameTree.childFrames.find((c) => c.frame.url === %q).frame;
		const world = await chrome.debugger.sendCommand(t, 'Page.createIsolatedWorld', { frameId: cross.id, worldName: 'test-writer' });
		await chrome.debugger.sendCommand(t, 'Runtime.evaluate', { contextId: world.executionContextId, expression:
			"const f = document.createElement('iframe'); document.body.append(f); f.contentDocument.body.innerHTML = '<button>Secret of the other origin</button>'" });
		return true;
	})()`, tab, other+"/swatch"))

	inv := frameList(t, s, p.lease.ID)
	byID := map[string]browser.Frame{}
	for _, f := range inv.Frames {
		byID[f.ID] = f
	}
	var blank *browser.Frame
	for _, f := range inv.Frames {
		if parent, ok := byID[f.ParentID]; ok && parent.Origin == other {
			blank = &f
		}
	}
	if blank == nil || blank.OriginRelation != "cross-origin" || blank.Origin != other {
		t.Fatalf("the other origin's blank frame: %+v in %+v", blank, inv.Frames)
	}
	_, _, err := p.observeWith(map[string]any{"frame": map[string]any{"frameId": blank.ID, "documentEpoch": blank.DocumentEpoch}})
	if rpc.CodeOf(err) != wire.CodePolicyDenied {
		t.Fatalf("observe the other origin's blank frame: %v", err)
	}
}
