// Package netguard decides which network addresses webhook deliveries may reach. Endpoint URLs
// are checked when they are saved, and (from the worker) again when a connection is made, so a
// name that later resolves to a private address is still refused.
package netguard

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// nonPublic lists the ranges a webhook must never reach: loopback, private, link-local,
// carrier-grade NAT, benchmarking, documentation, multicast and reserved space, v4 and v6.
var nonPublic = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	"::/96", "::1/128", "::ffff:0:0/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "fc00::/7",
	"fe80::/10", "fec0::/10", "ff00::/8",
)

func mustPrefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}

// IsPublic reports whether addr is a globally routable unicast address. IPv4 addresses embedded
// in IPv6 (mapped, NAT64 and 6to4 forms) are judged by the IPv4 address they carry. An address
// with a zone (fe80::1%eth0) is never public: a zone scopes the address to one interface, which
// only link-local and loopback routes need, and netip.Prefix.Contains is false for every zoned
// address, so without this check any zone would make a private address pass.
func IsPublic(addr netip.Addr) bool {
	if addr.Zone() != "" {
		return false
	}
	addr = embeddedIPv4(addr.Unmap())
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return false
		}
	}
	return addr.IsValid()
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func embeddedIPv4(addr netip.Addr) netip.Addr {
	b := addr.As16()
	switch {
	case addr.Is4():
		return addr
	case nat64.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6]))
	}
	return addr
}

// ParseHost interprets a URL host (without port or brackets) as an IP address the way C
// resolvers do, so "2130706433", "0x7f.1" and "0177.0.0.1" are all 127.0.0.1: an HTTP client
// may connect to such a host even though it does not look like an address.
func ParseHost(host string) (netip.Addr, bool) {
	host = strings.TrimSuffix(host, ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		return addr, true
	}
	return parseInetAton(host)
}

// parseInetAton accepts the inet_aton forms a.b.c.d, a.b.c, a.b and a, each part decimal,
// octal (leading 0) or hex (leading 0x).
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 || s == "" {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, err := parseAtonPart(p)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	// All but the last part are single bytes; the last fills the remaining bytes.
	var n uint64
	for _, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n = n<<8 | v
	}
	restBits := uint(8 * (5 - len(vals)))
	last := vals[len(vals)-1]
	if last >= 1<<restBits {
		return netip.Addr{}, false
	}
	n = n<<restBits | last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func parseAtonPart(p string) (uint64, error) {
	if p == "" {
		return 0, errors.New("empty part")
	}
	base := 10
	switch {
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	return strconv.ParseUint(p, base, 32)
}

// IsLocalName reports whether host is a name that always means this machine or a local network
// (localhost and the .localhost, .local, .internal and .home.arpa domains).
func IsLocalName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" {
		return true
	}
	for _, suffix := range []string{".localhost", ".local", ".internal", ".home.arpa"} {
		if strings.HasSuffix(h, suffix) {
			return true
		}
	}
	return false
}
