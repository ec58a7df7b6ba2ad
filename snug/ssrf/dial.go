package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// Resolver looks a name up. *net.Resolver is one; tests pass one that
// answers from a table.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc connects to an address ("ip:port"), as net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// BlockedError is the refusal of [Dialer.DialContext]: Host resolved (or
// was) to Addr, which [BlockedAddr] refuses. It matches [ErrBlocked].
type BlockedError struct {
	Host string
	Addr netip.Addr
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("ssrf: %s resolves to %s, an address the net capability never reaches", e.Host, e.Addr)
}

// Unwrap makes errors.Is(err, ErrBlocked) hold.
func (e *BlockedError) Unwrap() error { return ErrBlocked }

// Dialer connects only to addresses it has checked. For a name it asks
// Resolver for the addresses, refuses the name when any of them is blocked
// (an answer mixing public and private addresses is a rebinding tool), and
// then dials the checked addresses themselves, never the name again: what
// was checked is what is connected to.
type Dialer struct {
	Resolver Resolver
	Dial     DialFunc
}

// DialContext is the guarded dial, for http.Transport.DialContext.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("ssrf: bad port %q", portText)
	}
	addrs, err := d.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := d.Dial(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// resolve returns host's addresses, every one checked.
func (d *Dialer) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if BlockedAddr(a) {
			return nil, &BlockedError{Host: host, Addr: a}
		}
		return []netip.Addr{a}, nil
	}
	ipNetwork := "ip"
	switch network {
	case "tcp4":
		ipNetwork = "ip4"
	case "tcp6":
		ipNetwork = "ip6"
	}
	addrs, err := d.Resolver.LookupNetIP(ctx, ipNetwork, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	for _, a := range addrs {
		if BlockedAddr(a) {
			return nil, &BlockedError{Host: host, Addr: a}
		}
	}
	return addrs, nil
}
