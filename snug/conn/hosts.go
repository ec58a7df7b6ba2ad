package conn

import (
	"net/url"
	"slices"

	"github.com/dsh-browser/broker/snug/ssrf"
)

// NormalizeHost is the one host normalisation both sides of a ceiling
// check use: IDNA to ASCII, lower case, a trailing dot dropped, numeric
// IPv4 spellings to dotted decimal (package ssrf). api.münchen.example and
// api.xn--mnchen-3ya.example normalise alike.
func NormalizeHost(h string) (string, error) { return ssrf.CanonicalHost(h) }

// Ceiling is the host ceiling an approval freezes from this requirement:
// the declared hosts ∪ the hosts of the OAuth endpoints (authorize, token,
// refresh, revoke), normalised, sorted and unique. A lanHost adds no host:
// before its address is collected the ceiling is empty, which refuses
// everything. The order and form are stable, because import
// reconciliation compares the stored bytes.
func (r *Requirement) Ceiling() []string {
	set := map[string]bool{}
	for _, h := range r.DeclaredAPIHosts {
		set[h] = true
	}
	if e := r.Endpoints; e != nil {
		for _, raw := range []string{e.AuthorizeURL, e.TokenURL, e.RefreshURL, e.RevokeURL} {
			if raw == "" {
				continue
			}
			if u, err := url.Parse(raw); err == nil {
				if h, err := NormalizeHost(u.Hostname()); err == nil {
					set[h] = true
				}
			}
		}
	}
	hosts := make([]string, 0, len(set))
	for h := range set {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	return hosts
}

// HostsJSON is the stored form of a ceiling (snug_connections.allowed_hosts):
// a JSON array of the hosts as given.
func HostsJSON(hosts []string) string {
	return encodeCanonical(strings2any(hosts))
}

// InCeiling reports whether a request host is one of the ceiling's hosts:
// exact, after both are normalised (so case, IDNA and numeric spellings
// cannot differ and no suffix matches). The port is not part of a host.
func InCeiling(host string, ceiling []string) bool {
	h, err := NormalizeHost(host)
	if err != nil {
		return false
	}
	for _, c := range ceiling {
		if n, err := NormalizeHost(c); err == nil && n == h {
			return true
		}
	}
	return false
}

// CheckImported is the strict check of a connection row arriving in an
// imported file (§12.4): its requirement must parse and name the row's
// slot; the result is the ceiling an approval of it would freeze, in its
// stored form (HostsJSON), because the file's own allowed_hosts column is
// never trusted. It has the shape of snug/userdb's RequirementCheck.
func CheckImported(slot, requirement string) (allowedHosts string, err error) {
	r, err := ParseString(requirement)
	if err != nil {
		return "", err
	}
	if r.Slot != slot {
		return "", &Error{Field: "slot", Reason: "names " + r.Slot + ", not the row's " + slot}
	}
	return HostsJSON(r.Ceiling()), nil
}
