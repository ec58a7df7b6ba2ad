package chromium_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/dsh-browser/broker/test/harness/chromium"
)

// busyPage rewrites its DOM every millisecond, as an app that renders does.
const busyPage = `<!doctype html><title>busy</title><body><script>
let n = 0;
setInterval(() => {
  for (let i = 0; i < 20; i++) {
    const p = document.createElement('p');
    p.textContent = 'row ' + n++;
    p.dataset.n = n;
    document.body.append(p);
    if (document.body.children.length > 40) document.body.children[1].remove();
  }
}, 1);
</script></body>`

// TestEvaluateBusyPages evaluates in fresh targets of pages that never stop
// changing their DOM, as stack's WaitFrame does with an app's frames. With
// a chromedp context attached per target in place of Evaluate, -race failed
// it in about every other run: chromedp's attach fills its copy of the DOM
// while its event loop reads it.
func TestEvaluateBusyPages(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, busyPage) }))
	t.Cleanup(srv.Close)
	b := chromium.Launch(t, chromium.Options{})
	for range 20 {
		ctx, cancel := context.WithTimeout(b.Ctx, b.Timeout)
		res, err := chromedp.CallBrowser(ctx, target.CreateTarget, target.CreateTargetParams{URL: srv.URL})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		b.WaitEval(t, res.TargetID, `document.body?.children.length > 20`, 0)
		if n := chromium.Eval[int](t, b, res.TargetID, `document.querySelectorAll('p').length`); n < 20 || n > 40 {
			t.Fatalf("%d rows, want 20 to 40", n)
		}
		b.CloseTab(t, res.TargetID)
	}
}

// TestEvaluate checks what Evaluate returns, as chromedp.Evaluate would.
func TestEvaluate(t *testing.T) {
	t.Parallel()
	b := chromium.Launch(t, chromium.Options{})
	id := b.OpenTab(t, "about:blank")
	eval := func(expr string, timeout time.Duration) (any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return chromium.Evaluate[any](ctx, b, id, expr)
	}

	if got := chromium.Eval[map[string]int](t, b, id, `Promise.resolve({a: 1})`); got["a"] != 1 {
		t.Errorf("an awaited promise: %v", got)
	}
	if got := chromium.Eval[[]string](t, b, id, `null`); got != nil {
		t.Errorf("null into a slice: %v", got)
	}
	if v, err := eval(`undefined`, 10*time.Second); err != nil || v != nil {
		t.Errorf("undefined into any: %v, %v", v, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := chromium.Evaluate[int](ctx, b, id, `undefined`); !errors.Is(err, chromedp.ErrJSUndefined) {
		t.Errorf("undefined into int: %v", err)
	}
	if _, err := chromium.Evaluate[string](ctx, b, id, `null`); !errors.Is(err, chromedp.ErrJSNull) {
		t.Errorf("null into string: %v", err)
	}
	if _, err := eval(`nosuchname`, 10*time.Second); err == nil {
		t.Error("a ReferenceError was not an error")
	} else if _, ok := errors.AsType[*chromedp.ExceptionError](err); !ok {
		t.Errorf("a ReferenceError: %T %v", err, err)
	}
	if _, err := eval(`Promise.reject(new Error('no'))`, 10*time.Second); err == nil {
		t.Error("a rejected promise was not an error")
	}
	// ctx bounds the call; the connection stays usable after.
	if _, err := eval(`new Promise(() => {})`, 200*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a promise that never settles: %v", err)
	}
	if got := chromium.Eval[int](t, b, id, `6 * 7`); got != 42 {
		t.Errorf("after a timeout: %d", got)
	}

	// A target that went away is an error, not a wait; so is one never seen.
	b.CloseTab(t, id)
	for deadline := time.Now().Add(10 * time.Second); slices.ContainsFunc(b.Targets(t), func(i *target.Info) bool { return i.TargetID == id }); {
		if time.Now().After(deadline) {
			t.Fatal("the closed tab is still listed")
		}
		time.Sleep(25 * time.Millisecond)
	}
	if _, err := eval(`1`, 10*time.Second); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("in a closed tab: %v", err)
	}
	if _, err := chromium.Evaluate[int](ctx, b, "NOSUCHTARGET", `1`); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("in a target that never was: %v", err)
	}
}
