package netguard

import (
	"net/netip"
	"testing"
)

func TestParseHostSpellingsOfAddresses(t *testing.T) {
	cases := []struct {
		host string
		want string // "" means: not an address
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"}, // decimal
		{"0x7f000001", "127.0.0.1"}, // hex
		{"0177.0.0.1", "127.0.0.1"}, // octal first part
		{"127.1", "127.0.0.1"},      // a.b form
		{"127.0.1", "127.0.0.1"},    // a.b.c form
		{"0x7f.1", "127.0.0.1"},
		{"10.0.0.1.", "10.0.0.1"}, // trailing dot
		{"::1", "::1"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"example.com", ""},
		{"256.0.0.1", ""},
		{"4294967296", ""}, // one past 255.255.255.255
		{"1.2.3.4.5", ""},
		{"0x", ""},
		{"08.0.0.1", ""}, // 8 is not an octal digit
		{"", ""},
	}
	for _, c := range cases {
		got, ok := ParseHost(c.host)
		if c.want == "" {
			if ok {
				t.Errorf("ParseHost(%q) = %v, want not an address", c.host, got)
			}
			continue
		}
		if !ok || got != netip.MustParseAddr(c.want) {
			t.Errorf("ParseHost(%q) = %v, %v; want %s", c.host, got, ok, c.want)
		}
	}
}

func TestIsPublic(t *testing.T) {
	nonPublic := []string{
		"127.0.0.1", "127.255.255.254", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255",
		"::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", // IPv4-mapped
		"64:ff9b::7f00:1", // NAT64 of 127.0.0.1
		"2002:7f00:1::1",  // 6to4 of 127.0.0.1
		"::127.0.0.1",     // deprecated IPv4-compatible
		// Zoned addresses: netip.Prefix.Contains is false for any address with a zone, so a
		// zone must never make an address look public. A zone only means something on a
		// link-local or loopback route, which webhooks never take, so every zone is refused.
		"::1%lo", "fe80::1%eth0", "fd00:ec2::254%x", "::ffff:127.0.0.1%lo", "2606:4700::1111%eth0",
	}
	for _, s := range nonPublic {
		if IsPublic(netip.MustParseAddr(s)) {
			t.Errorf("IsPublic(%s) = true, want false", s)
		}
	}
	public := []string{"93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"}
	for _, s := range public {
		if !IsPublic(netip.MustParseAddr(s)) {
			t.Errorf("IsPublic(%s) = false, want true", s)
		}
	}
	if IsPublic(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

func TestIsLocalName(t *testing.T) {
	for _, h := range []string{"localhost", "LOCALHOST.", "api.localhost", "printer.local", "db.internal", "nas.home.arpa"} {
		if !IsLocalName(h) {
			t.Errorf("IsLocalName(%q) = false", h)
		}
	}
	for _, h := range []string{"example.com", "localhost.example.com", "internal.example.com"} {
		if IsLocalName(h) {
			t.Errorf("IsLocalName(%q) = true", h)
		}
	}
}
