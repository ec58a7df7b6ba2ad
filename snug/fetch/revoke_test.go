package fetch_test

import (
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/userdb"
)

// A revoked OAuth connection's refresh token is revoked at the provider's
// revokeUrl with the client's credentials; a refusal comes back scrubbed of
// the token; a connection with no revoke endpoint, or not signed in, asks
// nothing.
func TestRevokeAtProvider(t *testing.T) {
	w, p := calWorld(t)
	withRevoke := strings.Replace(strings.ReplaceAll(authCode, `"cal"`, `"cal2"`),
		`"tokenUrl":"https://auth.cal.example/token"`, `"tokenUrl":"https://auth.cal.example/token","revokeUrl":"https://auth.cal.example/revoke"`, 1)
	w.connect(withRevoke, userdb.Credentials{"client_id": "cal-client", "client_secret": "cal-client-secret"})

	if asked, ferr := w.ex.RevokeAtProvider(ctx, w.app, "cal2"); asked || ferr != nil {
		t.Fatalf("not signed in: asked %v, %+v", asked, ferr)
	}
	for _, slot := range []string{"cal", "cal2"} {
		authorize, ferr := w.ex.StartAuthorization(ctx, w.app, slot, redirectURI)
		if ferr != nil {
			t.Fatal(ferr)
		}
		if ferr := w.ex.CompleteAuthorization(ctx, w.app, slot, p.browse(t, authorize)); ferr != nil {
			t.Fatal(ferr)
		}
	}
	if asked, ferr := w.ex.RevokeAtProvider(ctx, w.app, "cal"); asked || ferr != nil || len(p.revokePOST) != 0 {
		t.Fatalf("no revoke endpoint: asked %v, %+v, %d POSTs", asked, ferr, len(p.revokePOST))
	}

	p.revokeCode = 400
	asked, ferr := w.ex.RevokeAtProvider(ctx, w.app, "cal2")
	if !asked || ferr == nil || ferr.Code != frame.CodeNetAuthFailed || strings.Contains(ferr.Message, "cal-refresh-1") ||
		!strings.Contains(ferr.Message, "revoke endpoint refused (400)") {
		t.Fatalf("refused: asked %v, %+v", asked, ferr)
	}
	p.revokeCode = 0
	if asked, ferr := w.ex.RevokeAtProvider(ctx, w.app, "cal2"); !asked || ferr != nil {
		t.Fatalf("accepted: asked %v, %+v", asked, ferr)
	}
	f := p.revokePOST[1]
	if f.Get("token") != "cal-refresh-1" || f.Get("token_type_hint") != "refresh_token" ||
		f.Get("client_id") != "cal-client" || f.Get("client_secret") != "cal-client-secret" {
		t.Fatalf("revoke POST %v", f)
	}

	// Once revoked here, the slot has no token and nothing is asked again.
	if _, err := w.db.RevokeConnection(ctx, w.app, "cal2"); err != nil {
		t.Fatal(err)
	}
	if asked, ferr := w.ex.RevokeAtProvider(ctx, w.app, "cal2"); asked || ferr != nil || len(p.revokePOST) != 2 {
		t.Fatalf("after revocation: asked %v, %+v, %d POSTs", asked, ferr, len(p.revokePOST))
	}
}
