package netguard

import (
	"errors"
	"net/netip"
	"syscall"
)

// ErrBlockedAddress is what a guarded connection to a non-public address fails with.
var ErrBlockedAddress = errors.New("the address is private, loopback or link-local, which this service may not reach")

// DialControl returns a net.Dialer Control function that refuses every connection to an address
// that is not public, unless one of allowed contains it. The check runs on the address actually
// dialled, after DNS resolution, so a public-looking name that resolves to a private address is
// still refused.
func DialControl(allowed []netip.Prefix) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return ErrBlockedAddress
		}
		if IsPublic(ap.Addr()) || inAny(allowed, ap.Addr()) {
			return nil
		}
		return ErrBlockedAddress
	}
}

func inAny(prefixes []netip.Prefix, addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.Zone() != "" {
		return false
	}
	for _, p := range prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
