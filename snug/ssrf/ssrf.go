// Package ssrf decides which hosts and addresses the Snug net capability
// may never reach (spec Part III §14 gate 5), and dials only addresses it
// has checked.
//
// A browser canonicalises a URL's host before anything looks at it (hex,
// octal and short IPv4 forms become dotted decimal, IDNA maps and
// lower-cases names); Go's net/url does not. [CanonicalHost] does it here,
// the WHATWG way, so every later check (the host ceiling, the block list)
// sees one spelling, and the request is sent to that spelling.
//
// The reference host checks names and literals only, because a browser
// cannot resolve names. This package goes further: [Dialer] resolves the
// name itself and checks every address it got before connecting, and
// connects to exactly the address it checked, so a name whose DNS answer
// changes between a check and the connect (DNS rebinding) cannot reach a
// private address.
package ssrf

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrInvalidHost: the host is not one a browser would accept, or looks
// like an IPv4 address but is not one (999.1.1.1). Such a host fails
// closed.
var ErrInvalidHost = errors.New("ssrf: invalid host")

// ErrBlocked: the host or one of its addresses is in a range the net
// capability may never reach (loopback, private, link-local, metadata,
// shared, reserved, multicast, and the names that stand for them).
var ErrBlocked = errors.New("ssrf: blocked address")

// CanonicalHost returns the canonical form of a URL's hostname, as a
// browser's URL parser would make it:
//
//   - an IPv6 literal (brackets optional) in its RFC 5952 form, without
//     brackets; a zone is refused;
//   - a name mapped and converted to ASCII by IDNA (UTS #46, STD3 rules:
//     letters, digits and hyphens only), lower case, one trailing dot
//     dropped;
//   - a name whose last label is a number — 2130706433, 0x7f.1, 0177.0.0.1,
//     127.1 — parsed as the IPv4 address it denotes, in dotted decimal.
//
// Anything else (an empty host, forbidden characters, a malformed number)
// is [ErrInvalidHost].
func CanonicalHost(host string) (string, error) {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", fmt.Errorf("%w: %q is not an IPv6 address", ErrInvalidHost, host)
		}
		return a.String(), nil
	}
	if strings.ContainsAny(host, "%[]@/\\?# ") || host == "" || !utf8.ValidString(host) {
		return "", fmt.Errorf("%w: %q", ErrInvalidHost, host)
	}
	name := strings.TrimSuffix(host, ".")
	ascii, err := idna.Lookup.ToASCII(name)
	if err == nil {
		// A fixed point, or not a host: what is checked is what is sent.
		var again string
		again, err = idna.Lookup.ToASCII(ascii)
		if again != ascii {
			err = ErrInvalidHost
		}
	}
	if err != nil || ascii == "" {
		// Lookup refuses what STD3 refuses (underscores, spaces…); a
		// dotted numeric host it may still pass, and that is fine.
		return "", fmt.Errorf("%w: %q", ErrInvalidHost, host)
	}
	if len(ascii) > 253 {
		return "", fmt.Errorf("%w: %q is longer than 253 characters", ErrInvalidHost, host)
	}
	for _, label := range strings.Split(ascii, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("%w: %q has an empty or over-long label", ErrInvalidHost, host)
		}
	}
	if endsInNumber(ascii) {
		a, ok := parseIPv4(ascii)
		if !ok {
			return "", fmt.Errorf("%w: %q looks like an IPv4 address but is not one", ErrInvalidHost, host)
		}
		return a.String(), nil
	}
	return ascii, nil
}

// endsInNumber is the WHATWG URL standard's test: the last label is all
// digits, or a 0x hexadecimal number.
func endsInNumber(host string) bool {
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := ipv4Number(last)
	return ok
}

// parseIPv4 is the WHATWG IPv4 parser: one to four parts, each decimal,
// octal (a leading 0) or hexadecimal (0x); the last part fills the bytes
// the others leave.
func parseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// ipv4Number parses one part of a WHATWG IPv4 address.
func ipv4Number(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
		if s == "" {
			return 0, true
		}
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	case s == "":
		return 0, false
	}
	if len(s) > 32 { // no valid part is this long; bounds the work
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

// blockedNames are the names that stand for this machine or its network,
// matched on a whole name or as its last labels.
var blockedSuffixes = []string{".localhost", ".local", ".internal", ".home.arpa", ".localdomain"}

// BlockedHost reports whether a canonical host (from [CanonicalHost]) is
// off-limits whatever the ceiling says: localhost and the local suffixes,
// or an address [BlockedAddr] refuses. A host that is not canonical fails
// closed: it is blocked.
func BlockedHost(canon string) bool {
	c, err := CanonicalHost(canon)
	if err != nil || c != canon {
		return true
	}
	if a, err := netip.ParseAddr(canon); err == nil {
		return BlockedAddr(a)
	}
	if canon == "localhost" || canon == "localdomain" {
		return true
	}
	for _, s := range blockedSuffixes {
		if strings.HasSuffix(canon, s) {
			return true
		}
	}
	return false
}

// LoopbackHost reports whether a canonical host names this machine: it may
// never enter a connection's host ceiling (spec Part V).
func LoopbackHost(canon string) bool {
	if canon == "localhost" || strings.HasSuffix(canon, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(canon)
	if err != nil {
		return false
	}
	a = unwrap(a)
	return a.IsLoopback() || a.IsUnspecified()
}

// blocked4 are the IPv4 ranges the net capability never reaches: the
// reference's list (RFC 6890 special-purpose space) and 198.18.0.0/15,
// 192.88.99.0/24 besides.
var blocked4 = prefixes(
	"0.0.0.0/8",       // this network
	"10.0.0.0/8",      // private
	"100.64.0.0/10",   // shared (CGNAT)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, cloud metadata
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // TEST-NET-1
	"192.88.99.0/24",  // 6to4 relay anycast
	"192.168.0.0/16",  // private
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // TEST-NET-2
	"203.0.113.0/24",  // TEST-NET-3
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, broadcast
)

// blocked6 are the IPv6 ranges never reached. IPv4-mapped, NAT64 and 6to4
// addresses are judged by the IPv4 address they carry (see unwrap).
var blocked6 = prefixes(
	"::/96",          // unspecified, loopback, the deprecated IPv4-compatible form
	"100::/64",       // discard-only
	"2001::/23",      // IETF protocol assignments (Teredo, ORCHID…)
	"2001:db8::/32",  // documentation
	"64:ff9b:1::/48", // local-use NAT64
	"fc00::/7",       // unique local
	"fe80::/10",      // link-local
	"fec0::/10",      // site-local (deprecated)
	"ff00::/8",       // multicast
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// unwrap returns the IPv4 address an IPv6 address carries — IPv4-mapped
// (::ffff:a.b.c.d), NAT64 (64:ff9b::a.b.c.d) or 6to4 (2002:aabb:ccdd::) —
// or the address itself.
func unwrap(a netip.Addr) netip.Addr {
	a = a.WithZone("")
	if a.Is4In6() {
		return a.Unmap()
	}
	if !a.Is6() {
		return a
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6]))
	}
	return a
}

// BlockedAddr reports whether the net capability may never connect to a:
// any special-purpose range above, judged on the IPv4 address an IPv6
// address carries when it carries one. An invalid address is blocked.
func BlockedAddr(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = unwrap(a)
	list := blocked6
	if a.Is4() {
		list = blocked4
	}
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
