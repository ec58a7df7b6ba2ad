package apps_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/admission"
	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/wire"
)

// TestExtensionAgrees holds the extension's copy of the runner protocol
// (extension/lib/snug.js, SNUG) to this package, name by name.
func TestExtensionAgrees(t *testing.T) {
	src, err := os.ReadFile("../../extension/lib/snug.js")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"HOST":              fmt.Sprintf("'%s'", install.HostName),
		"KIND":              fmt.Sprintf("'%s'", apps.Kind),
		"CAP_RUNNER":        fmt.Sprintf("'%s'", apps.CapRunner),
		"ORDERED_IDS":       fmt.Sprintf("'%s'", wire.CapOrderedIDs),
		"ATTACH":            fmt.Sprintf("'%s'", apps.ProviderAttach),
		"EVENT_FRAME":       fmt.Sprintf("'%s'", apps.EventFrame),
		"EVENT_LOAD":        fmt.Sprintf("'%s'", apps.EventLoad),
		"EVENT_DETACH":      fmt.Sprintf("'%s'", apps.EventDetach),
		"EVENT_RESET_AGENT": fmt.Sprintf("'%s'", apps.EventResetAgent),
		"EVENT_CHAT":        fmt.Sprintf("'%s'", apps.EventChat),
		"CALL_OPEN_TAB":     fmt.Sprintf("'%s'", apps.CallOpenTab),
		"CALL_DELIVER":      fmt.Sprintf("'%s'", apps.CallDeliver),
		"CALL_CONFIRM":      fmt.Sprintf("'%s'", apps.CallConfirm),
		"CONNECTIONS":       fmt.Sprintf("'%s'", apps.ProviderConnections),
		"APPROVE":           fmt.Sprintf("'%s'", apps.ProviderApprove),
		"REAPPROVE":         fmt.Sprintf("'%s'", apps.ProviderReapprove),
		"REVOKE":            fmt.Sprintf("'%s'", apps.ProviderRevoke),
		"AUTHORIZE":         fmt.Sprintf("'%s'", apps.ProviderAuthorize),
		"COMPLETE":          fmt.Sprintf("'%s'", apps.ProviderComplete),
		"CONFIRM_NET":       fmt.Sprintf("'%s'", apps.ConfirmNet),
		"CONFIRM_OPEN_URL":  fmt.Sprintf("'%s'", apps.ConfirmOpenURL),
		"ADMISSION_REQUEST": fmt.Sprintf("'%s'", admission.ProviderMethod),
		"PIECE_HTML":        fmt.Sprintf("'%s'", apps.PieceHTML),
		"PIECE_FRAME":       fmt.Sprintf("'%s'", apps.PieceFrame),
		"PIECE_APP":         fmt.Sprintf("'%s'", apps.PieceApp),
		"PIECE_CLOSED":      fmt.Sprintf("'%s'", apps.PieceClosed),
		"PIECE_CHAT":        fmt.Sprintf("'%s'", apps.PieceChat),
		"MAX_CHAT_CHARS":    fmt.Sprint(apps.MaxChatChars),
		"MAX_PIECE_BYTES":   fmt.Sprint(apps.MaxPieceBytes),
		"MAX_RELAY_BYTES":   fmt.Sprint(apps.MaxRelayBytes),
		"MAX_RUNNERS":       fmt.Sprint(apps.MaxRunners),
		"CDN_ALLOWLIST":     "Object.freeze(['" + strings.Join(frame.CDNAllowlist[:], "', '") + "'])",
	}
	block := regexp.MustCompile(`(?s)export const SNUG = Object\.freeze\(\{(.*?)\n\}\);`).FindSubmatch(src)
	if block == nil {
		t.Fatal("no SNUG table in snug.js")
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s+([A-Z_]+): (.+),$`).FindAllSubmatch(block[1], -1) {
		got[string(m[1])] = string(m[2])
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("SNUG.%s is %s, want %s", k, got[k], v)
		}
	}
	ops := fmt.Sprintf("const CHAT_OPS = ['%s', '%s', '%s', '%s'];", apps.ChatSend, apps.ChatApprove, apps.ChatDecline, apps.ChatRevert)
	if !strings.Contains(string(src), ops) {
		t.Errorf("snug.js lacks %s", ops)
	}
	// And the manifest's sandbox policy allows scripts and styles from
	// exactly the CDN allowlist, and connections from none.
	manifest, err := os.ReadFile("../../extension/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	cdn := "https://" + strings.Join(frame.CDNAllowlist[:], " https://")
	for _, d := range []string{"script-src 'unsafe-inline' " + cdn + ";", "style-src 'unsafe-inline' " + cdn + ";",
		"connect-src 'none'", "default-src 'none'", "form-action 'none'", "frame-src 'none'", "worker-src 'none'"} {
		if !strings.Contains(string(manifest), d) {
			t.Errorf("the sandbox policy lacks %q", d)
		}
	}
}
