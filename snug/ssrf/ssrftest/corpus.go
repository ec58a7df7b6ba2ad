package ssrftest

// Corpus are spellings of hosts the net capability must never reach. Each
// either fails to canonicalise or canonicalises to a blocked host: zero
// bypasses. The executor's corpus test (package snug/fetch) sends each
// through all ten gates.
//
// It lives here, with the pretend Internet, so that every package that
// fetches tests against the same list.
var Corpus = []string{
	// Loopback in every IPv4 spelling a browser accepts.
	"127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7F000001", "0x7f.1", "0x7f.0.0.1",
	"0177.0.0.1", "0177.1", "017700000001", "0x7f.0x0.0x0.0x1", "127.000.000.001", "127.0.0.1.", "127.0.0.1..",
	"0", "0.0.0.0", "0x0", "00", "0.0", "127.255.255.255",
	// Private, link-local and metadata.
	"10.0.0.1", "10.1", "012.0.0.1", "0xa.0.0.1", "167772161", "172.16.0.1", "172.31.255.254", "0xac100001",
	"192.168.1.1", "192.168.257", "3232235777", "0xc0a80101", "169.254.169.254", "2852039166", "0xa9fea9fe",
	"0251.0376.0251.0376", "169.254.43518", "100.64.0.1", "100.127.255.254", "192.0.0.170", "192.0.2.1",
	"198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1",
	"255.255.255.255", "4294967295", "0xffffffff",
	// IPv6: loopback, unspecified, mapped, NAT64, 6to4, ULA, link-local, multicast, Teredo, documentation.
	"[::1]", "::1", "[0:0:0:0:0:0:0:1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:7f00:1]",
	"[::ffff:10.0.0.1]", "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "[64:ff9b::7f00:1]", "[64:ff9b::a9fe:a9fe]",
	"[64:ff9b::10.0.0.1]", "[64:ff9b:1::1]", "[2002:7f00:1::]", "[2002:a9fe:a9fe::1]", "[fc00::1]", "[fd12:3456::1]",
	"[fe80::1]", "[fe80::1%25eth0]", "[fec0::1]", "[ff02::1]", "[2001::1]", "[2001:db8::1]", "[::127.0.0.1]",
	"[100::1]",
	// Names that stand for this machine or its network.
	"localhost", "LOCALHOST", "localhost.", "LocalHost.", "a.localhost", "x.y.localhost.", "printer.local",
	"metadata.google.internal", "METADATA.GOOGLE.INTERNAL.", "router.home.arpa", "box.localdomain",
	"ｌｏｃａｌｈｏｓｔ", "localhos\u0074", "xn--localhost-", "１２７.０.０.１", "127。0。0。1",
	// Invalid, which must fail closed.
	"999.1.1.1", "1.2.3.4.5", "256.0.0.1", "0x100000000", "08.0.0.1", "0x7g.0.0.1", "", ".", "a..b",
	"exa mple.com", "ex_ample.com", "%31%32%37.0.0.1", "[::1", "::1]", "[1::2::3]", "a@b", "evil.com\\@x",
}
