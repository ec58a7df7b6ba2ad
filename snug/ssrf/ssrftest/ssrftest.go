// Package ssrftest is a pretend Internet for tests of code that fetches
// through package ssrf: a resolver that answers from a table, a dialer that
// reaches only the loopback servers it was told about, and TLS servers on
// loopback with certificates from a throwaway authority.
//
// The names resolve to public-looking addresses, so the guarded dialer
// lets them through exactly as it would real ones; the dialer then routes
// each such address to a loopback listener. Nothing here can reach past
// loopback: an address without a route is refused, and every lookup and
// dial is recorded, so a test sees what the code under test asked for.
package ssrftest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNoRoute: the dialer was asked for an address no test server stands
// behind. Nothing was dialled.
var ErrNoRoute = errors.New("ssrftest: no route to that address (tests reach loopback only)")

// Net is the injected resolver and dialer. Its methods are safe for
// concurrent use.
type Net struct {
	mu      sync.Mutex
	hosts   map[string][][]netip.Addr // successive answers; the last repeats
	routes  map[netip.AddrPort]string // public address:port → loopback address
	lookups []string
	dials   []string
}

// NewNet returns an empty pretend Internet.
func NewNet() *Net {
	return &Net{hosts: map[string][][]netip.Addr{}, routes: map[netip.AddrPort]string{}}
}

// Answer makes name resolve to addrs. Called again for the same name, it
// queues another answer: lookups take them in turn and the last repeats (a
// rebinding resolver is two calls).
func (n *Net) Answer(name string, addrs ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	n.hosts[name] = append(n.hosts[name], as)
}

// Route makes a dial to public (an "ip:port") connect to the loopback
// address to.
func (n *Net) Route(public, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routes[netip.MustParseAddrPort(public)] = to
}

// LookupNetIP answers from the table (ssrf.Resolver).
func (n *Net) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lookups = append(n.lookups, host)
	as := n.hosts[host]
	if len(as) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	answer := as[0]
	if len(as) > 1 {
		n.hosts[host] = as[1:]
	}
	return answer, nil
}

// Dial connects a routed address to its loopback server (ssrf.DialFunc);
// any other address is refused without dialling.
func (n *Net) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	n.mu.Lock()
	n.dials = append(n.dials, address)
	ap, err := netip.ParseAddrPort(address)
	to, ok := n.routes[ap]
	n.mu.Unlock()
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoRoute, address)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", to)
}

// Lookups returns the names looked up so far.
func (n *Net) Lookups() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lookups...)
}

// Dials returns the addresses dialled (or refused) so far.
func (n *Net) Dials() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.dials...)
}

// CA is a throwaway certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// Pool trusts the CA and nothing else.
	Pool *x509.CertPool
	// PEM is the CA's certificate.
	PEM []byte
}

// NewCA makes a CA valid for a day.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ssrftest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{cert: cert, key: key, Pool: pool, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

var serial atomic.Int64

// Leaf issues a server certificate for names.
func (ca *CA) Leaf(names ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1) + 1),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// Server is an HTTPS server on loopback presenting a certificate for its
// names, counting the requests it served.
type Server struct {
	// Addr is its loopback address.
	Addr     string
	srv      *http.Server
	requests atomic.Int64
}

// Serve starts h on a loopback port over TLS with a leaf of ca for names.
func Serve(ca *CA, names []string, h http.Handler) (*Server, error) {
	leaf, err := ca.Leaf(names...)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: ln.Addr().String()}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.requests.Add(1)
			h.ServeHTTP(w, r)
		}),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{leaf}},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go s.srv.ServeTLS(ln, "", "")
	return s, nil
}

// Requests counts the requests served so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }
