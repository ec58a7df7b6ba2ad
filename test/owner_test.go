package test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/activity"
	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/wire"
)

// brokerLog runs `broker log` with args on b's state directory and returns
// its entries (--json).
func brokerLog(t *testing.T, b *testenv.Broker, args ...string) []activity.Entry {
	t.Helper()
	out, errOut, code := testenv.Run(t, nil, append([]string{"log", "--json", "--state-dir", b.StateDir}, args...)...)
	if code != 0 {
		t.Fatalf("broker log: exit %d\n%s", code, errOut)
	}
	var entries []activity.Entry
	for line := range strings.Lines(out) {
		var e activity.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("broker log --json line %q: %v", line, err)
		}
		entries = append(entries, e)
	}
	return entries
}

// fillRequest is a fill of the standard page's text box.
func fillRequest(t *testing.T, c *client.Client, session, requestID, text string) map[string]any {
	l := claimTab(t, c, session)
	o := observe(t, c, session, l.ID)
	return map[string]any{"sessionId": session, "request": map[string]any{"requestId": requestID, "leaseId": l.ID, "documentEpoch": o.DocumentEpoch,
		"action": map[string]any{"kind": "fill", "ref": refOf(t, o, "textbox", "Your name"), "text": text}}}
}

// TestLogAgreesWithJournalAfterCrash kills the broker with SIGKILL at each
// point of a durable action's life and compares, after a restart, what
// the activity log says with what the journal answers a retry: where the
// journal holds intent without outcome (the input may have happened), the
// log says interrupted, the same; where the journal has nothing (killed
// before the intent), the log still says interrupted — it is written first
// and never claims less than the journal; where the journal has the outcome
// but the log's end record was not written yet, the log says interrupted
// — it is never more certain than the journal. The typed text is in no
// entry.
func TestLogAgreesWithJournalAfterCrash(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	const secret = "s3cret-typed-value"
	for _, point := range []string{"before-intent", "after-intent", "after-dispatch", "after-outcome"} {
		b.Stop(t)
		b.Env = []string{"DSH_FAILPOINT=" + point}
		b.Start(t)
		s := startScripted(t, b, "inst")
		epoch, text := "F:L1", []string{"DSH demo"}
		standardPage(s, &epoch, &text)
		c := b.Client(t, client.Options{JournalKey: journalKey})
		params := fillRequest(t, c, "s", "crash-"+point, secret)
		if _, err := c.Call(context.Background(), "browser.act", params); !errors.Is(err, wire.Err(wire.CodeConnectionLost)) {
			t.Fatalf("%s: act answered %v; the broker should have died", point, err)
		}
		<-b.Exited()
		b.Env = nil
		b.Start(t)

		c = b.Client(t, client.Options{JournalKey: journalKey})
		raw, err := c.Call(context.Background(), "browser.act", params)
		var r browser.ActionResult
		json.Unmarshal(raw, &r)
		entries := brokerLog(t, b, "-n", "1")
		if len(entries) != 1 {
			t.Fatalf("%s: %d entries", point, len(entries))
		}
		e := entries[0]
		if e.State != activity.StateInterrupted || e.Outcome != "unknown" || e.Dispatch != "unknown" || e.Kind != "fill" ||
			e.TextLength == nil || *e.TextLength != len(secret) || e.Name != "Your name" || e.Origin != "https://app.test" {
			t.Fatalf("%s: the log says %+v", point, e)
		}
		switch point {
		case "before-intent":
			if !errors.Is(err, wire.Err(wire.CodeLeaseRevoked)) {
				t.Fatalf("%s: the journal knew the action: %s %v", point, raw, err)
			}
		case "after-intent", "after-dispatch":
			if err != nil || r.Recovery == nil || r.Recovery.State != "reserved" || r.Dispatch != "dispatched" {
				t.Fatalf("%s: the journal says %s %v; the log says the input may have happened", point, raw, err)
			}
		case "after-outcome":
			if err != nil || r.Recovery == nil || r.Recovery.State != "settled" {
				t.Fatalf("%s: the journal says %s %v", point, raw, err)
			}
		}
	}
	out, _, _ := testenv.Run(t, nil, "log", "--state-dir", b.StateDir)
	if strings.Contains(out, secret) || !strings.Contains(out, "interrupted") || !strings.Contains(out, `fill textbox "Your name" with 18 characters`) {
		t.Fatalf("broker log:\n%s", out)
	}
	t.Logf("broker log:\n%s", out)
}

// TestBrokerLogCommand: what agents did, for a person, from the file the
// broker keeps — filters, --json, and --follow seeing a new action as it
// finishes; typed text appears as its length only.
func TestBrokerLogCommand(t *testing.T) {
	t.Parallel()
	b := testenv.StartBroker(t)
	s := startScripted(t, b, "inst")
	epoch, text := "F:L1", []string{"DSH demo"}
	standardPage(s, &epoch, &text)
	c := b.Client(t, testenv.ClientOptions())
	if _, errOut, code := testenv.Run(t, nil, "log", "--state-dir", b.StateDir); code != 0 || !strings.Contains(errOut, "no action has been recorded yet") {
		t.Fatalf("an empty log (exit %d): %s", code, errOut)
	}
	params := fillRequest(t, c, "s", "one", "hunter2")
	act(t, c, "s", params["request"].(map[string]any))

	follow := exec.Command(testenv.Binary(t, "broker"), "log", "--follow", "--state-dir", b.StateDir)
	stdout, _ := follow.StdoutPipe()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { follow.Process.Kill(); follow.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("broker log --follow printed nothing")
			return ""
		}
	}
	if l := next(); !strings.Contains(l, `fill textbox "Your name" with 7 characters`) || !strings.Contains(l, "https://app.test") || strings.Contains(l, "hunter2") {
		t.Fatalf("first line %q", l)
	}
	o := observe(t, c, "s", params["request"].(map[string]any)["leaseId"].(string))
	act(t, c, "s", map[string]any{"requestId": "two", "leaseId": params["request"].(map[string]any)["leaseId"], "documentEpoch": o.DocumentEpoch,
		"action": map[string]any{"kind": "press", "ref": refOf(t, o, "button", "Greet"), "key": "Enter"}})
	if l := next(); !strings.Contains(l, `press Enter on button "Greet"`) {
		t.Fatalf("followed line %q", l)
	}

	all := brokerLog(t, b)
	if len(all) != 2 || all[0].Kind != "fill" || all[1].Kind != "press" {
		t.Fatalf("entries %+v", all)
	}
	if got := brokerLog(t, b, "--tab", "1", "--agent", "(pid "+strconv.Itoa(os.Getpid())+")", "-n", "1"); len(got) != 1 || got[0].Kind != "press" {
		t.Fatalf("filtered %+v", got)
	}
	if _, errOut, _ := testenv.Run(t, nil, "log", "--state-dir", b.StateDir, "--agent", "nobody"); !strings.Contains(errOut, "no matching action") {
		t.Fatalf("no match: %s", errOut)
	}
}

// TestBrokerConsoleCommand: `broker console` asks the owner's browser to
// show its console; with none connected it prints the address.
func TestBrokerConsoleCommand(t *testing.T) {
	t.Parallel()
	url := install.ExtensionOrigin(install.PinnedExtensionID) + "console.html"
	if out, _, code := testenv.Run(t, nil, "console", "--print"); code != 0 || strings.TrimSpace(out) != url {
		t.Fatalf("console --print (exit %d): %s", code, out)
	}
	b := testenv.StartBroker(t)
	out, errOut, code := testenv.Run(t, nil, "console", "--runtime-dir", b.RuntimeDir)
	if code != 1 || !strings.Contains(out, url) || !strings.Contains(errOut, "no browser") {
		t.Fatalf("console without a browser (exit %d): %s%s", code, out, errOut)
	}
	// An owner surface that shows the console is asked to open it.
	p := b.OwnerPeer(t)
	h := testenv.ProviderHello("", "inst")
	h["capabilities"] = append(browser.Required(), wire.CapOwnerConsole)
	if r := p.Call("hello", h); !r.OK {
		t.Fatal(r.Code)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		out, errOut, code = testenv.Run(t, nil, "console", "--runtime-dir", b.RuntimeDir)
	}()
	for {
		env := p.Read()
		if env == nil {
			t.Fatal("the broker closed the provider")
		}
		if env.Type == wire.TypeRequest && env.Method == wire.ConsoleOpen {
			answer(t, p, env.ID, `{"opened":true}`)
			break
		}
	}
	<-done
	if code != 0 || !strings.Contains(out, "The console is open") {
		t.Fatalf("console with a browser (exit %d): %s%s", code, out, errOut)
	}
}
