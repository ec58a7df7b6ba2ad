package fetch

import (
	"context"
	"net/url"
	"slices"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/userdb"
)

// RevokeAtProvider tells the provider of an approved OAuth connection that
// its tokens are no longer wanted (RFC 7009), before the host deletes them
// with the revocation: the refresh token when there is one (revoking it
// ends the access tokens made from it), else the access token, posted with
// the client's id and secret to the requirement's revokeUrl — https, inside
// the ceiling, past the SSRF guard, no redirect, like every token request.
// asked says whether a request was made: none is for a connection of
// another kind, with no revoke endpoint or no token. An error is for the
// log: the revocation on this machine does not wait on the provider.
func (e *Executor) RevokeAtProvider(ctx context.Context, appID, slot string) (asked bool, ferr *Error) {
	rows, err := e.store.Connections(ctx, appID)
	if err != nil {
		return false, hostError(err)
	}
	i := slices.IndexFunc(rows, func(c userdb.Connection) bool { return c.Slot == slot })
	if i < 0 || rows[i].Status != conn.StatusApproved {
		return false, nil
	}
	req, err := rows[i].Requirement()
	if err != nil || (req.Kind != conn.KindOAuthAuthCode && req.Kind != conn.KindOAuthClientCreds) ||
		req.Endpoints == nil || req.Endpoints.RevokeURL == "" {
		return false, nil
	}
	form := url.Values{}
	for _, f := range []struct{ field, hint string }{{fieldRefreshToken, "refresh_token"}, {fieldAccessToken, "access_token"}} {
		token, ferr := e.secret(ctx, appID, slot, f.field)
		if ferr != nil {
			return false, ferr
		}
		if token != "" {
			form.Set("token", token)
			form.Set("token_type_hint", f.hint)
			break
		}
	}
	if form.Get("token") == "" {
		return false, nil
	}
	var scrub scrubber
	for _, field := range []string{fieldClientID, fieldClientSecret} {
		v, ferr := e.secret(ctx, appID, slot, field)
		if ferr != nil {
			return false, ferr
		}
		if v != "" {
			form.Set(field, v)
			if field == fieldClientSecret {
				scrub = append(scrub, v)
			}
		}
	}
	_, ferr = e.post(ctx, rows[i].AllowedHosts(), "revoke", req.Endpoints.RevokeURL, form, scrub)
	return true, ferr
}
