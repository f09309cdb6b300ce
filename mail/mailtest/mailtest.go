// Package mailtest runs a real SMTP server inside the test process and keeps every mail it is
// given, so that tests read what the service sends after a whole SMTP conversation (greeting,
// STARTTLS, AUTH, MAIL, RCPT, DATA) rather than what it hands to a stub.
package mailtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Options shape the server. The zero value is a plain server without TLS or AUTH, like the mail
// catchers of local development.
type Options struct {
	// TLSConfig, when set, makes the server offer STARTTLS, or with ImplicitTLS speak TLS from
	// the first byte (smtps).
	TLSConfig   *tls.Config
	ImplicitTLS bool
	// Username and Password, when set, make the server require AUTH PLAIN with them before MAIL.
	// Over a connection without TLS the server offers AUTH only when TLSConfig is nil.
	Username, Password string
}

// Message is one mail the server accepted.
type Message struct {
	From   string   // the envelope sender (MAIL FROM)
	To     []string // the envelope recipients (RCPT TO)
	Header netmail.Header
	Text   string // the text/plain part, decoded
	HTML   string // the text/html part, decoded
	TLS    bool   // whether the connection was encrypted when the mail was sent
	User   string // who authenticated, if anyone
}

// Server is a running SMTP server on 127.0.0.1; it stops when the test ends.
type Server struct {
	// Addr is the server's host:port.
	Addr string

	opts    Options
	mu      sync.Mutex
	msgs    []Message
	arrived chan struct{} // closed and replaced whenever a mail arrives
}

// NewServer starts a server on a free port of 127.0.0.1.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), opts: opts, arrived: make(chan struct{})}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{server: s, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.AllowInsecureAuth = opts.TLSConfig == nil
	if opts.ImplicitTLS {
		ln = tls.NewListener(ln, opts.TLSConfig)
	} else {
		srv.TLSConfig = opts.TLSConfig
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return s
}

// Messages returns the mails received so far, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// WaitFor returns the first mail addressed to to, waiting for it at most within.
func (s *Server) WaitFor(t testing.TB, to string, within time.Duration) Message {
	t.Helper()
	timeout := time.After(within)
	for {
		s.mu.Lock()
		for _, m := range s.msgs {
			if slices.Contains(m.To, to) {
				s.mu.Unlock()
				return m
			}
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-timeout:
			t.Fatalf("mailtest: no mail to %s within %s", to, within)
		}
	}
}

func (s *Server) add(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, m)
	close(s.arrived)
	s.arrived = make(chan struct{})
}

// session is one SMTP conversation.
type session struct {
	server *Server
	conn   *smtp.Conn
	user   string
	msg    Message
}

func (c *session) AuthMechanisms() []string {
	if c.server.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (c *session) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain || c.server.opts.Username == "" {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != c.server.opts.Username || password != c.server.opts.Password {
			return smtp.ErrAuthFailed
		}
		c.user = username
		return nil
	}), nil
}

func (c *session) Mail(from string, _ *smtp.MailOptions) error {
	if c.server.opts.Username != "" && c.user == "" {
		return smtp.ErrAuthRequired
	}
	c.msg = Message{From: from}
	return nil
}

func (c *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	c.msg.To = append(c.msg.To, to)
	return nil
}

func (c *session) Data(r io.Reader) error {
	m, err := parse(r)
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: err.Error()}
	}
	m.From, m.To, m.User = c.msg.From, c.msg.To, c.user
	_, m.TLS = c.conn.TLSConnectionState()
	c.server.add(m)
	return nil
}

func (c *session) Reset()        { c.msg = Message{} }
func (c *session) Logout() error { return nil }

// parse reads a mail's header and its text/plain and text/html parts, however nested and
// encoded, so that a test can look for a link that quoted-printable broke across lines.
func parse(r io.Reader) (Message, error) {
	mm, err := netmail.ReadMessage(r)
	if err != nil {
		return Message{}, err
	}
	m := Message{Header: mm.Header}
	err = walk(&m, mm.Header.Get("Content-Type"), mm.Header.Get("Content-Transfer-Encoding"), mm.Body)
	return m, err
}

func walk(m *Message, contentType, encoding string, body io.Reader) error {
	if contentType == "" {
		contentType = "text/plain"
	}
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart() // decodes quoted-printable itself
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := walk(m, p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p); err != nil {
				return err
			}
		}
	}
	switch strings.ToLower(encoding) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	switch mediaType {
	case "text/plain":
		m.Text += string(b)
	case "text/html":
		m.HTML += string(b)
	}
	return nil
}

// NewTLSConfig returns a server configuration with a fresh self-signed certificate for
// 127.0.0.1 and localhost, and the pool a client needs to trust it.
func NewTLSConfig(t testing.TB) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "mailtest"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true,
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},

		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		MinVersion:   tls.VersionTLS12,
	}, pool
}
