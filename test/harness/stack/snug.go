package stack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/wire"
)

// AppTab is a Snug app shown in a runner tab: the runner page, and the
// app's iframe, a target of its own (Chromium isolates sandboxed frames).
type AppTab struct {
	Runner target.ID
	Frame  target.ID
	Ready  string // the app's ready marker when it was found
}

// OpenApp asks the broker to open app id (waiting for the extension's snug
// port to connect) and waits for its runner tab and for the app to say it
// is ready: readyExpr, evaluated in the app's frame, is a non-empty string.
func (s *Stack) OpenApp(t testing.TB, id, readyExpr string) *AppTab {
	t.Helper()
	c := s.B.Client(t, client.Options{})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := c.Call(ctx, apps.MethodOpen, apps.AppRef{App: id})
		cancel()
		if err == nil {
			break
		}
		if !client.IsCode(err, wire.CodeConnectionLost) || time.Now().After(deadline) {
			t.Fatalf("open %s: %v\nbroker:\n%s", id, err, s.B.Stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	runner := s.Browser.WaitTarget(t, func(i *target.Info) bool {
		return i.Type == "page" && strings.HasPrefix(i.URL, "chrome-extension://"+install.PinnedExtensionID+"/snug/runner.html?app="+id)
	}, 30*time.Second).TargetID
	a := &AppTab{Runner: runner}
	a.WaitFrame(t, s, readyExpr, "")
	return a
}

// tryEval evaluates expr in target id, and reports false instead of
// failing when the target went away meanwhile (a frame being replaced).
// It goes through chromium.Evaluate, not a chromedp context per poll:
// chromedp's attach to a frame that renders is a data race (-race).
func tryEval(b *chromium.Browser, id target.ID, expr string) (string, bool) {
	ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer cancel()
	v, err := chromium.Evaluate[string](ctx, b, id, expr)
	return v, err == nil
}

// WaitFrame waits for the runner's app frame whose readyExpr is a
// non-empty string other than not (after a reload: a new instance).
func (a *AppTab) WaitFrame(t testing.TB, s *Stack, readyExpr, not string) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		for _, info := range s.Browser.Targets(t) {
			if info.Type != "iframe" || info.ParentID != a.Runner {
				continue
			}
			v, ok := tryEval(s.Browser, info.TargetID, `(() => { try { return String(`+readyExpr+` || '') } catch { return '' } })()`)
			if ok && v != "" && v != not {
				a.Frame, a.Ready = info.TargetID, v
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app never became ready (%s)\nrunner: %s\nbroker:\n%s", readyExpr,
				chromium.Eval[string](t, s.Browser, a.Runner, `document.body.innerText`), s.B.Stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
