package ssrf_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-browser/broker/snug/ssrf"
	"github.com/dsh-browser/broker/snug/ssrf/ssrftest"
)

// Public hosts the guard must let through.
var public = []string{
	"example.com", "api.example.com", "internal-tools.example.com", "mylocal.example.com", "localhost.example.com",
	"8.8.8.8", "1.1.1.1", "[2001:4860:4860::8888]", "api.münchen.example", "xn--mnchen-3ya.example", "API.EXAMPLE.COM.",
	"93.184.215.14", "172.32.0.1", "172.15.255.255", "100.128.0.1", "[2606:4700::1111]",
}

func TestCorpusIsBlocked(t *testing.T) {
	for _, h := range ssrftest.Corpus {
		canon, err := ssrf.CanonicalHost(h)
		if err != nil {
			if !errors.Is(err, ssrf.ErrInvalidHost) {
				t.Errorf("%q: %v, not ErrInvalidHost", h, err)
			}
			continue
		}
		if !ssrf.BlockedHost(canon) {
			t.Errorf("BYPASS: %q canonicalises to %q, which is not blocked", h, canon)
		}
	}
}

func TestPublicIsNotBlocked(t *testing.T) {
	for _, h := range public {
		canon, err := ssrf.CanonicalHost(h)
		if err != nil {
			t.Errorf("%q: %v", h, err)
			continue
		}
		if ssrf.BlockedHost(canon) {
			t.Errorf("%q (%q) is blocked", h, canon)
		}
	}
}

func TestCanonicalHost(t *testing.T) {
	for in, want := range map[string]string{
		"2130706433":          "127.0.0.1",
		"0x7f.1":              "127.0.0.1",
		"0177.0.0.1":          "127.0.0.1",
		"127.1":               "127.0.0.1",
		"192.168.257":         "192.168.1.1",
		"169.254.43518":       "169.254.169.254",
		"API.Example.COM.":    "api.example.com",
		"api.münchen.example": "api.xn--mnchen-3ya.example",
		"１２７.０.０.１":           "127.0.0.1",
		"[::ffff:7f00:1]":     "::ffff:127.0.0.1",
		"[0:0::1]":            "::1",
		"8.8.8.8":             "8.8.8.8",
	} {
		got, err := ssrf.CanonicalHost(in)
		if err != nil || got != want {
			t.Errorf("CanonicalHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// The boundaries of 172.16.0.0/12: 172.16.0.1–172.31.255.254 are private,
// 172.15.x and 172.32.x are not.
func TestPrivateBoundaries(t *testing.T) {
	for addr, blocked := range map[string]bool{
		"172.15.255.255": false, "172.16.0.0": true, "172.16.0.1": true, "172.31.255.254": true, "172.31.255.255": true,
		"172.32.0.0": false, "100.63.255.255": false, "100.64.0.0": true, "100.127.255.255": true, "100.128.0.0": false,
		"9.255.255.255": false, "11.0.0.0": false, "126.255.255.255": false, "128.0.0.0": false,
		"64:ff9b::808:808": false, "2002:808:808::": false, "2001:200::1": false,
	} {
		if got := ssrf.BlockedAddr(netip.MustParseAddr(addr)); got != blocked {
			t.Errorf("BlockedAddr(%s) = %v, want %v", addr, got, blocked)
		}
	}
}

func TestLoopbackHost(t *testing.T) {
	for h, want := range map[string]bool{
		"localhost": true, "a.localhost": true, "127.0.0.1": true, "127.9.9.9": true, "::1": true, "0.0.0.0": true,
		"::ffff:127.0.0.1": true, "10.0.0.1": false, "example.com": false, "localhost.example.com": false,
	} {
		if got := ssrf.LoopbackHost(h); got != want {
			t.Errorf("LoopbackHost(%q) = %v", h, got)
		}
	}
}

// table answers lookups from a map and records what it was asked.
type table struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr // successive answers per name
	asked   []string
}

func (r *table) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	as := r.answers[host]
	if len(as) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	a := as[0]
	if len(as) > 1 {
		r.answers[host] = as[1:]
	}
	return a, nil
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// The dialer connects to the address it checked, never the name; an answer
// with any blocked address refuses the name; a rebinding resolver (public
// first, loopback next) gets a fresh check on every dial.
func TestDialer(t *testing.T) {
	var dialed []string
	dial := func(_ context.Context, _, address string) (net.Conn, error) {
		dialed = append(dialed, address)
		c1, c2 := net.Pipe()
		c2.Close()
		return c1, nil
	}
	r := &table{answers: map[string][][]netip.Addr{
		"api.example.com": {addrs("93.184.215.14")},
		"mixed.example":   {addrs("93.184.215.14", "10.0.0.1")},
		"rebind.example":  {addrs("93.184.215.14"), addrs("127.0.0.1")},
		"mapped.example":  {addrs("::ffff:169.254.169.254")},
	}}
	d := &ssrf.Dialer{Resolver: r, Dial: dial}
	ctx := context.Background()
	if c, err := d.DialContext(ctx, "tcp", "api.example.com:443"); err != nil {
		t.Fatal(err)
	} else {
		c.Close()
	}
	for _, addr := range []string{"mixed.example:443", "mapped.example:443", "127.0.0.1:443", "[::1]:443", "10.0.0.1:80"} {
		_, err := d.DialContext(ctx, "tcp", addr)
		if be, ok := errors.AsType[*ssrf.BlockedError](err); !ok || !errors.Is(err, ssrf.ErrBlocked) {
			t.Errorf("%s: %v, want a BlockedError", addr, err)
		} else if strings.Contains(addr, "example") && be.Host != strings.TrimSuffix(addr, ":443") {
			t.Errorf("%s: blocked host %q", addr, be.Host)
		}
	}
	if c, err := d.DialContext(ctx, "tcp", "rebind.example:443"); err != nil {
		t.Fatalf("rebind first answer: %v", err)
	} else {
		c.Close()
	}
	if _, err := d.DialContext(ctx, "tcp", "rebind.example:443"); !errors.Is(err, ssrf.ErrBlocked) {
		t.Fatalf("rebind second answer: %v", err)
	}
	want := []string{"93.184.215.14:443", "93.184.215.14:443"}
	if strings.Join(dialed, ",") != strings.Join(want, ",") {
		t.Fatalf("dialed %v, want %v", dialed, want)
	}
}

func FuzzCanonicalHost(f *testing.F) {
	for _, h := range ssrftest.Corpus {
		f.Add(h)
	}
	for _, h := range public {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		canon, err := ssrf.CanonicalHost(h)
		if err != nil {
			return
		}
		// Canonical is a fixed point, and the block decision is the same
		// on it.
		again, err := ssrf.CanonicalHost(canon)
		if err != nil || again != canon {
			t.Fatalf("CanonicalHost(%q) = %q, then %q, %v", h, canon, again, err)
		}
		// Whatever a name canonicalises to, an address literal is judged
		// by its address.
		if a, err := netip.ParseAddr(canon); err == nil && ssrf.BlockedAddr(a) != ssrf.BlockedHost(canon) {
			t.Fatalf("%q: BlockedAddr and BlockedHost disagree", canon)
		}
	})
}
