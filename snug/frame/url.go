package frame

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// checkOpenURL applies §4's rules that the schema cannot express: the URL
// parses, is https:, and carries no username or password.
//
// It is stricter than a browser's URL parser, never looser: a URL that a
// browser would silently repair (surrounding spaces, tabs or newlines inside,
// backslashes for slashes) or read as another host is refused, so what the
// confirm dialog shows is what opens.
func checkOpenURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("does not parse as a URL")
	}
	if u.Scheme != "https" {
		return errors.New("must be an https: URL")
	}
	if u.User != nil {
		return errors.New("must carry no username or password")
	}
	if u.Opaque != "" || u.Host == "" {
		return errors.New("must be an absolute https: URL with a host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n > 65535 {
			return errors.New("has a port out of range")
		}
	}
	host := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() || a.Zone() != "" {
			return errors.New("has an invalid IPv6 host")
		}
		return nil
	}
	// The WHATWG URL standard's forbidden domain code points.
	if strings.ContainsFunc(host, func(r rune) bool {
		return r <= 0x20 || r == 0x7f || strings.ContainsRune("#%/:<>?@[\\]^|", r)
	}) {
		return errors.New("has a host a browser would not accept")
	}
	return nil
}
