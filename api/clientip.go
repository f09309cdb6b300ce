package api

import (
	"net/http"
	"net/netip"
	"strings"
)

// clientIP is the TCP peer, unless the peer is a trusted proxy: then it is the rightmost address
// of the proxy header (Options.ProxyHeader: X-Forwarded-For, or the RFC 7239 Forwarded header's
// for= parameters) that is not itself a trusted proxy, so a client cannot choose its own address
// by sending the header. Only that one header is read: a proxy writes one of the two and passes
// the other through as the client sent it, so reading both would let the client pick; and a
// disagreement must not fall back to the proxy's own address, where every client behind it would
// share one rate-limit budget.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	addr := peer.Addr().Unmap()
	if !s.trusted(addr) {
		return addr
	}
	if s.opts.ProxyHeader == ProxyHeaderForwarded {
		client, _ := s.forwardedClient(addr, r.Header.Values("Forwarded"), parseForwardedHop)
		return client
	}
	// When every hop is a trusted proxy, the leftmost is the closest to the client.
	client, _ := s.forwardedClient(addr, r.Header.Values("X-Forwarded-For"), parseXFFHop)
	return client
}

// forwardedClient walks the hops of a forwarding header from the right, starting at the trusted
// peer, and returns the first address that is not a trusted proxy (found true); or, when the hops
// run out or one cannot be read (nothing further left is trusted), the last trusted hop reached
// (found false).
func (s *Server) forwardedClient(peer netip.Addr, values []string, parseHop func(string) (netip.Addr, bool)) (netip.Addr, bool) {
	addr := peer
	for i := len(values) - 1; i >= 0; i-- {
		hops := splitList(values[i], ',')
		for j := len(hops) - 1; j >= 0; j-- {
			hop, ok := parseHop(hops[j])
			if !ok {
				return addr, false
			}
			if !s.trusted(hop) {
				return hop, true
			}
			addr = hop
		}
	}
	return addr, false
}

// parseXFFHop reads one X-Forwarded-For element: an IP address.
func parseXFFHop(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	return a.Unmap(), err == nil
}

// parseForwardedHop reads the for= parameter of one Forwarded element (RFC 7239 §4, §6):
// `for=192.0.2.60;proto=https`, `for="192.0.2.60:8080"`, `for="[2001:db8::17]:4711"`. An element
// without for=, or with an obfuscated or "unknown" node, names no address.
func parseForwardedHop(element string) (netip.Addr, bool) {
	for _, pair := range splitList(element, ';') {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "for") {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		if strings.HasPrefix(value, "[") { // [IPv6] or [IPv6]:port
			end := strings.IndexByte(value, ']')
			if end < 0 || (end+1 < len(value) && value[end+1] != ':') {
				return netip.Addr{}, false
			}
			a, err := netip.ParseAddr(value[1:end])
			return a.Unmap(), err == nil && a.Is6()
		}
		if host, _, found := strings.Cut(value, ":"); found { // IPv4:port; bare IPv6 is not allowed
			value = host
		}
		a, err := netip.ParseAddr(value)
		return a, err == nil && a.Is4()
	}
	return netip.Addr{}, false
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// splitList splits s at sep and trims spaces and tabs from the parts, dropping empty ones. It
// ignores quoting on purpose: no address contains a comma or a semicolon, and a client's stray
// quote must not swallow the hops a proxy appends after it.
func splitList(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == sep {
			if part := strings.Trim(s[start:i], " \t"); part != "" {
				out = append(out, part)
			}
			start = i + 1
		}
	}
	return out
}
