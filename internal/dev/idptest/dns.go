package idptest

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// DNS is an authoritative DNS server on 127.0.0.1 (UDP) that answers TXT questions from
// records a test publishes, and nothing else: for the TXT record that proves an SSO domain.
// Resolver sends Go's own resolver to it, so the service's lookups run over real DNS messages.
type DNS struct {
	addr string

	mu  sync.Mutex
	txt map[string][]string // fully qualified lowercase name → texts
}

// StartDNS serves until the test ends.
func StartDNS(t testing.TB) *DNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &DNS{addr: pc.LocalAddr().String(), txt: map[string][]string{}}
	t.Cleanup(func() { _ = pc.Close() })
	go d.serve(pc)
	return d
}

// Publish adds a TXT record with text value at name.
func (d *DNS) Publish(name, value string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fqdn := strings.ToLower(strings.TrimSuffix(name, ".")) + "."
	d.txt[fqdn] = append(d.txt[fqdn], value)
}

// Resolver is a Go resolver that asks this server every question.
func (d *DNS) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", d.addr)
	}}
}

func (d *DNS) serve(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if answer := d.answer(buf[:n]); answer != nil {
			_, _ = pc.WriteTo(answer, from)
		}
	}
}

// answer builds the reply to one query: the TXT records of its name, NXDOMAIN when there are
// none, and nothing for a message that does not parse.
func (d *DNS) answer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	d.mu.Lock()
	texts := append([]string(nil), d.txt[strings.ToLower(q.Name.String())]...)
	d.mu.Unlock()
	reply := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if q.Type != dnsmessage.TypeTXT || len(texts) == 0 {
		reply.RCode = dnsmessage.RCodeNameError
		texts = nil
	}
	b := dnsmessage.NewBuilder(nil, reply)
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	for _, text := range texts {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeTXT, Class: dnsmessage.ClassINET}
		if b.TXTResource(rh, dnsmessage.TXTResource{TXT: []string{text}}) != nil {
			return nil
		}
	}
	msg, err := b.Finish()
	if err != nil {
		return nil
	}
	return msg
}
