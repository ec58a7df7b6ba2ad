// Package stack starts the whole product for end-to-end tests and
// benchmarks: a real broker, real Chromium with the unpacked extension, the
// installed native host, pages on localhost and one client.
package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/client"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/testenv"
	"github.com/dsh-browser/broker/test/harness/testpages"
	"github.com/dsh-browser/broker/wire"
)

// Stack is the whole product on one machine: the broker, real Chromium with
// the unpacked extension, the installed native host, pages on localhost and
// one client.
type Stack struct {
	B        *testenv.Broker
	Browser  *chromium.Browser
	Pages    *testpages.Server
	Client   *client.Client
	Events   chan *wire.Envelope
	Instance string

	answered map[target.ID]bool // admission windows already answered
}

// ExtensionDir returns the absolute path of the repository's extension/.
func ExtensionDir(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	dir, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "..", "extension"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Start starts the broker with brokerArgs, installs the native host into a
// fresh Chromium profile, launches Chromium with the extension and waits
// until the extension has connected. With "--admission=prompt" among
// brokerArgs the stack's own client is admitted first, as the owner would:
// by clicking Allow in the extension's admission window.
func Start(t testing.TB, brokerArgs ...string) *Stack {
	t.Helper()
	chromium.Require(t)
	return startWith(t, testenv.StartBroker(t, brokerArgs...), slices.Contains(brokerArgs, "--admission=prompt"))
}

// StartInProcess is Start with the real broker server run in the test's
// process (testenv.StartBrokerInProcess), its provider kinds those
// services returns: for seams only a constructor fills, such as the apps'
// network reached through an injected resolver and dialer.
func StartInProcess(t testing.TB, services func(stateDir string) []service.Register) *Stack {
	t.Helper()
	chromium.Require(t)
	return startWith(t, testenv.StartBrokerInProcess(t, services), false)
}

func startWith(t testing.TB, b *testenv.Broker, prompt bool) *Stack {
	t.Helper()
	s := &Stack{B: b, Pages: testpages.Serve(t), Events: make(chan *wire.Envelope, 64),
		answered: make(map[target.ID]bool)}
	home := testenv.ShortTempDir(t)
	manifestDir := filepath.Join(home, "manifests")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	if out, errOut, code := testenv.Run(t, env, "install", "--browser", "chromium", "--no-service", "--manifest-dir", manifestDir,
		"--runtime-dir", s.B.RuntimeDir, "--nativehost", testenv.Binary(t, "nativehost")); code != 0 {
		t.Fatalf("install: %s%s", out, errOut)
	}
	manifest, err := os.ReadFile(filepath.Join(manifestDir, install.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	s.Browser = chromium.Launch(t, chromium.Options{
		ExtensionDir: ExtensionDir(t),
		NativeHosts:  map[string][]byte{install.ManifestName: manifest},
	})
	s.Client = s.B.Client(t, client.Options{OnEvent: func(ev *wire.Envelope) { s.Events <- ev }})
	if prompt {
		s.Admit(t, ProcessLabel(os.Getpid()), "allow")
		s.WaitAdmission(t, s.Events, "granted")
	}
	s.Instance = s.WaitInstance(t, "")
	return s
}

// ProcessLabel is how the broker names a client process to the user:
// "<comm> (pid N)". Every client of one process has the same label.
func ProcessLabel(pid int) string {
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return fmt.Sprintf("%s (pid %d)", strings.TrimSpace(string(comm)), pid)
}

// Admit waits for an admission window (admit.html) not answered yet that
// asks about a connection labelled label, and clicks button ("allow" or
// "deny") in it, as the owner would. It returns the window.
func (s *Stack) Admit(t testing.TB, label, button string) *target.Info {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, info := range s.Browser.Targets(t) {
			if info.Type != "page" || !strings.Contains(info.URL, install.PinnedExtensionID+"/admit.html") || s.answered[info.TargetID] {
				continue
			}
			if s.Browser.Text(t, info.TargetID, "#client") != label {
				continue // another program's question
			}
			s.answered[info.TargetID] = true
			s.Browser.Click(t, info.TargetID, "#"+button)
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("no admission window for %q\nbroker:\n%s", label, s.B.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitAdmission waits for the broker.admission event with state on events
// (a client's event channel), skipping other events.
func (s *Stack) WaitAdmission(t testing.TB, events <-chan *wire.Envelope, state string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Event != "broker.admission" {
				continue
			}
			var v struct{ State string }
			if json.Unmarshal(ev.Value, &v); v.State != state {
				t.Fatalf("broker.admission %s, want state %q", ev.Value, state)
			}
			return
		case <-timeout:
			t.Fatalf("no broker.admission event with state %q\nbroker:\n%s", state, s.B.Stderr)
		}
	}
}

// WaitInstance waits for a connected browser instance other than not.
func (s *Stack) WaitInstance(t testing.TB, not string) string {
	t.Helper()
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for id == "" {
		raw, err := s.Client.Call(context.Background(), "browser.instances", nil)
		if err != nil {
			t.Fatal(err)
		}
		var list []struct{ ID string }
		json.Unmarshal(raw, &list)
		for _, in := range list {
			if in.ID != not {
				id = in.ID
			}
		}
		if id == "" {
			if time.Now().After(deadline) {
				t.Fatalf("the extension never connected\nbroker:\n%s\nbrowser:\n%s", s.B.Stderr, s.Browser.StderrTail(40))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return id
}

// tab opens url and returns the tab handle the broker uses for it.
func (s *Stack) Tab(t testing.TB, url string) (string, target.ID) {
	t.Helper()
	id := s.Browser.OpenTab(t, url)
	return fmt.Sprintf("%s:%d", s.Instance, s.Browser.TabIDOf(t, id)), id
}

func (s *Stack) Call(t testing.TB, method string, params any) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return s.Client.Call(ctx, method, params)
}

func (s *Stack) Claim(t testing.TB, session, tab string) browser.LeaseResult {
	t.Helper()
	raw, err := s.Call(t, "browser.claim", map[string]any{"sessionId": session, "instanceId": s.Instance, "tab": tab})
	if err != nil {
		t.Fatalf("claim: %v\nbroker:\n%s", err, s.B.Stderr)
	}
	var l browser.LeaseResult
	json.Unmarshal(raw, &l)
	return l
}

func (s *Stack) Observe(t testing.TB, session, leaseID string) browser.Observation {
	t.Helper()
	raw, err := s.Call(t, "browser.observe", map[string]any{"sessionId": session, "leaseId": leaseID})
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	var o browser.Observation
	json.Unmarshal(raw, &o)
	return o
}

var requestSeq int

func (s *Stack) Act(t testing.TB, session string, o browser.Observation, leaseID string, action map[string]any) browser.ActionResult {
	t.Helper()
	requestSeq++
	raw, err := s.Call(t, "browser.act", map[string]any{"sessionId": session, "request": map[string]any{
		"requestId": fmt.Sprintf("req-%d-%d", time.Now().UnixNano(), requestSeq), "leaseId": leaseID,
		"documentEpoch": o.DocumentEpoch, "action": action,
	}})
	if err != nil {
		t.Fatalf("act %v: %v", action, err)
	}
	var r browser.ActionResult
	json.Unmarshal(raw, &r)
	return r
}

// approve waits for the extension's approval window and clicks a button.
func (s *Stack) Approve(t testing.TB, button string) *target.Info {
	t.Helper()
	win := s.Browser.WaitTarget(t, func(i *target.Info) bool {
		return i.Type == "page" && strings.Contains(i.URL, install.PinnedExtensionID+"/approve.html")
	}, 30*time.Second)
	s.Browser.Click(t, win.TargetID, "#"+button)
	return win
}

func (s *Stack) WaitRevoked(t testing.TB, leaseID string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-s.Events:
			if ev.Event == "browser.lease-revoked" && strings.Contains(string(ev.Value), leaseID) {
				return
			}
		case <-timeout:
			t.Fatalf("no browser.lease-revoked for %s\nbroker:\n%s", leaseID, s.B.Stderr)
		}
	}
}
