package mail

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html/template"
	"net"
	netmail "net/mail"
	"net/url"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// DefaultFrom is the From address when BGCHECK_SMTP_URL has no from parameter. Many servers
// refuse it: production sets from to an address of its own domain.
const DefaultFrom = "bgcheck@localhost"

// sendTimeout bounds one mail from dialling to QUIT, so that a stuck server cannot hold the
// API's background work (and its shutdown) for long.
const sendTimeout = 30 * time.Second

// authMechanisms are tried in this order among those the server offers. PLAIN and LOGIN send the
// password itself, so the library sends them only over TLS or to localhost; the others never
// reveal it.
var authMechanisms = []gomail.SMTPAuthType{
	gomail.SMTPAuthSCRAMSHA256, gomail.SMTPAuthSCRAMSHA1, gomail.SMTPAuthPlain, gomail.SMTPAuthLogin,
	gomail.SMTPAuthCramMD5,
}

// security is how a connection to the SMTP server is protected.
type security int

const (
	startTLSIfOffered security = iota // smtp://, the default: STARTTLS when the server offers it
	startTLSRequired                  // smtp://…?tls=starttls
	noTLS                             // smtp://…?tls=none: local mail catchers
	implicitTLS                       // smtps://: TLS from the first byte
)

func (s security) String() string {
	switch s {
	case startTLSRequired:
		return "starttls"
	case noTLS:
		return "none"
	case implicitTLS:
		return "implicit"
	default:
		return "starttls-if-offered"
	}
}

// SMTPSender mails sign-in links through one SMTP server. It opens a connection per mail: links
// are rare, and no connection is left for the server to time out. It never logs the link.
type SMTPSender struct {
	host               string
	port               int
	from               string
	security           security
	username, password string
	tlsConfig          *tls.Config
}

// NewSMTPSender reads the URL of BGCHECK_SMTP_URL:
//
//	smtp://[user:password@]host[:port][?from=ADDRESS][&tls=starttls|none]
//	smtps://[user:password@]host[:port][?from=ADDRESS]
//
// smtp:// (port 587 by default) upgrades the connection with STARTTLS when the server offers it
// and otherwise sends in the clear. That opportunistic default suits both relays and local mail
// catchers, but an attacker on the path can strip the offer: set tls=starttls to refuse a
// server without STARTTLS, or tls=none never to try it (MailHog, Mailpit and smtp4dev have no
// TLS). smtps:// (port 465 by default) speaks TLS from the first byte. Certificates are checked
// against the system's roots.
//
// User and password, percent-encoded, turn on SMTP AUTH with the best mechanism the server
// offers; PLAIN and LOGIN are used only over TLS or to localhost, so a password never crosses
// the network in the clear. from is the From address, percent-encoded, with or without a
// display name (from=bgcheck%40example.com); DefaultFrom by default. Other parameters are
// errors, so a misspelt one does not pass unnoticed. No error repeats the password.
func NewSMTPSender(rawURL string) (*SMTPSender, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL, password included
		}
		return nil, fmt.Errorf("not a URL such as smtp://user:password@host:587: %w", err)
	}
	s := &SMTPSender{host: u.Hostname(), from: DefaultFrom}
	switch u.Scheme {
	case "smtp":
		s.port = gomail.DefaultPortTLS
	case "smtps":
		s.port, s.security = gomail.DefaultPortSSL, implicitTLS
	default:
		return nil, fmt.Errorf("scheme %q: use smtp:// or smtps://", u.Scheme)
	}
	if u.Opaque != "" || s.host == "" {
		return nil, errors.New("no host: use smtp://host:port")
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return nil, errors.New("a path or fragment has no meaning here: use smtp://host:port?from=…")
	}
	if p := u.Port(); p != "" {
		if s.port, err = strconv.Atoi(p); err != nil || s.port < 1 || s.port > 65535 {
			return nil, fmt.Errorf("port %q is not a number from 1 to 65535", p)
		}
	}
	if u.User != nil {
		var ok bool
		s.username = u.User.Username()
		s.password, ok = u.User.Password()
		if s.username == "" || !ok {
			return nil, errors.New("give both user and password (user:password@host), or neither")
		}
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	for name, values := range query {
		if len(values) != 1 {
			return nil, fmt.Errorf("parameter %s is given %d times", name, len(values))
		}
		v := values[0]
		switch name {
		case "from":
			if _, err := netmail.ParseAddress(v); err != nil {
				return nil, fmt.Errorf("from: %q is not an e-mail address", v)
			}
			s.from = v
		case "tls":
			if s.security == implicitTLS {
				return nil, errors.New("tls applies to smtp:// only: smtps:// always speaks TLS")
			}
			switch v {
			case "starttls":
				s.security = startTLSRequired
			case "none":
				s.security = noTLS
			default:
				return nil, fmt.Errorf("tls: %q is neither starttls nor none", v)
			}
		default:
			return nil, fmt.Errorf("unknown parameter %q: only from and tls are understood", name)
		}
	}
	s.tlsConfig = &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}
	return s, nil
}

// Addr is the server's host:port.
func (s *SMTPSender) Addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// SendMagicLink mails link to the address to. The mail says the link expires in 15 minutes and
// works once (API.md §3). The send gets 30 seconds in all, less if ctx ends sooner.
func (s *SMTPSender) SendMagicLink(ctx context.Context, to, link string) error {
	msg, err := s.magicLinkMessage(to, link)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	client, err := s.client(ctx)
	if err != nil {
		return err
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return fmt.Errorf("smtp %s: %w", s.Addr(), err)
	}
	return nil
}

// client makes a go-mail client for one send: the library's Client changes its own fields while
// it sends, so one is not shared between concurrent mails.
func (s *SMTPSender) client(ctx context.Context) (*gomail.Client, error) {
	opts := []gomail.Option{
		gomail.WithPort(s.port),
		gomail.WithTimeout(sendTimeout),
		gomail.WithTLSConfig(s.tlsConfig),
		// The library joins host and port with a bare colon, wrong for an IPv6 address, so the
		// dial ignores the address it is given.
		gomail.WithDialContextFunc(func(dialCtx context.Context, network, _ string) (net.Conn, error) {
			return s.dial(ctx, dialCtx, network)
		}),
	}
	switch s.security {
	case startTLSIfOffered:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case startTLSRequired:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case noTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	case implicitTLS:
		opts = append(opts, gomail.WithSSL()) // the handshake itself is in dial
	}
	if s.username != "" {
		opts = append(opts, gomail.WithUsername(s.username), gomail.WithPassword(s.password),
			gomail.WithOpportunisticSMTPAuth(authMechanisms...))
	}
	return gomail.NewClient(s.host, opts...)
}

// dial connects (with TLS at once for smtps://) and ties the connection to sendCtx: the library
// bounds each SMTP command, not the whole conversation, so closing the connection when sendCtx
// ends is what keeps a send within its time.
func (s *SMTPSender) dial(sendCtx, dialCtx context.Context, network string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(dialCtx, network, s.Addr())
	if err != nil {
		return nil, err
	}
	context.AfterFunc(sendCtx, func() { _ = conn.Close() })
	if s.security != implicitTLS {
		return conn, nil
	}
	tc := tls.Client(conn, s.tlsConfig)
	if err := tc.HandshakeContext(dialCtx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// magicLinkSubject is the subject of sign-in mails.
const magicLinkSubject = "Your bgcheck sign-in link"

// magicLinkText is the plain-text body; %s is the link.
const magicLinkText = `Hello,

use this link to sign in to bgcheck:

%s

The link expires in 15 minutes and works only once. If you did not ask to sign in, you can
ignore this e-mail.
`

var magicLinkHTML = template.Must(template.New("html").Parse(`<!DOCTYPE html>
<html><body>
<p>Hello,</p>
<p>use this link to sign in to bgcheck:</p>
<p><a href="{{.}}">Sign in to bgcheck</a></p>
<p>The link expires in 15 minutes and works only once. If you did not ask to sign in, you can
ignore this e-mail.</p>
</body></html>
`))

// magicLinkMessage composes the mail: plain text with the HTML alternative.
func (s *SMTPSender) magicLinkMessage(to, link string) (*gomail.Msg, error) {
	m := gomail.NewMsg()
	if err := m.From(s.from); err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	if err := m.To(to); err != nil {
		return nil, fmt.Errorf("recipient: %w", err)
	}
	m.Subject(magicLinkSubject)
	// RFC 3834: an automatic mail, to which vacation responders should not answer.
	m.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	var html bytes.Buffer
	if err := magicLinkHTML.Execute(&html, link); err != nil {
		return nil, err
	}
	m.SetBodyString(gomail.TypeTextPlain, fmt.Sprintf(magicLinkText, link))
	m.AddAlternativeString(gomail.TypeTextHTML, html.String())
	return m, nil
}
