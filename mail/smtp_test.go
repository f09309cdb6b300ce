package mail_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/mail/mailtest"
)

// A link as the API makes it: long enough that quoted-printable breaks it across lines.
const link = "https://portal.example.com/magic-link?token=Q2hlY2sgdGhhdCB0aGUgd2hvbGUgbGluayBhcnJpdmVz"

// The mail goes through a real SMTP conversation in each security mode and arrives with the
// right envelope, headers and link; neither the link nor the password reaches the log.
func TestSMTPSenderDeliversMagicLink(t *testing.T) {
	serverTLS, roots := mailtest.NewTLSConfig(t)
	tests := []struct {
		name     string
		server   mailtest.Options
		url      func(addr string) string
		wantFrom string
		wantTLS  bool
		wantUser string
	}{{
		name:     "no STARTTLS offered: sent in the clear, default From",
		url:      func(addr string) string { return "smtp://" + addr },
		wantFrom: mail.DefaultFrom,
	}, {
		name:     "STARTTLS offered and taken, then AUTH",
		server:   mailtest.Options{TLSConfig: serverTLS, Username: "relay", Password: "s3cret pass"},
		url:      func(addr string) string { return "smtp://relay:s3cret%20pass@" + addr + "?from=bgcheck%40example.com" },
		wantFrom: "bgcheck@example.com",
		wantTLS:  true,
		wantUser: "relay",
	}, {
		name:   "STARTTLS required",
		server: mailtest.Options{TLSConfig: serverTLS},
		url: func(addr string) string {
			return "smtp://" + addr + "?tls=starttls&from=" + url.QueryEscape("Bgcheck <no-reply@example.com>")
		},
		wantFrom: "no-reply@example.com",
		wantTLS:  true,
	}, {
		name:     "implicit TLS with AUTH",
		server:   mailtest.Options{TLSConfig: serverTLS, ImplicitTLS: true, Username: "relay", Password: "s3cret pass"},
		url:      func(addr string) string { return "smtps://relay:s3cret%20pass@" + addr },
		wantFrom: mail.DefaultFrom,
		wantTLS:  true,
		wantUser: "relay",
	}, {
		name:     "tls=none to a local catcher with AUTH (PLAIN is allowed to localhost)",
		server:   mailtest.Options{Username: "dev", Password: "dev"},
		url:      func(addr string) string { return "smtp://dev:dev@" + addr + "?tls=none" },
		wantFrom: mail.DefaultFrom,
		wantUser: "dev",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.NewServer(t, tt.server)
			var logs syncBuffer
			sender, err := mail.New(tt.url(srv.Addr), slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			sender.(*mail.SMTPSender).SetRootCAs(roots)
			if err := sender.SendMagicLink(context.Background(), "consumer@example.com", link); err != nil {
				t.Fatal(err)
			}

			msgs := srv.Messages()
			if len(msgs) != 1 {
				t.Fatalf("%d mails arrived, want 1", len(msgs))
			}
			m := msgs[0]
			if m.From != tt.wantFrom || len(m.To) != 1 || m.To[0] != "consumer@example.com" {
				t.Errorf("envelope from %q to %q", m.From, m.To)
			}
			if m.TLS != tt.wantTLS || m.User != tt.wantUser {
				t.Errorf("TLS %v, user %q; want %v, %q", m.TLS, m.User, tt.wantTLS, tt.wantUser)
			}
			if got := m.Header.Get("Subject"); got != "Your bgcheck sign-in link" {
				t.Errorf("Subject %q", got)
			}
			if got := m.Header.Get("To"); got != "<consumer@example.com>" {
				t.Errorf("To %q", got)
			}
			if from, err := m.Header.AddressList("From"); err != nil || len(from) != 1 || from[0].Address != tt.wantFrom {
				t.Errorf("From %q (%v)", m.Header.Get("From"), err)
			}
			if m.Header.Get("Auto-Submitted") != "auto-generated" || m.Header.Get("Message-Id") == "" || m.Header.Get("Date") == "" {
				t.Errorf("header %v", m.Header)
			}
			for _, want := range []string{link, "15 minutes", "only once"} {
				if !strings.Contains(m.Text, want) {
					t.Errorf("text part lacks %q:\n%s", want, m.Text)
				}
			}
			if !strings.Contains(m.HTML, `href="`+link+`"`) {
				t.Errorf("HTML part lacks the link:\n%s", m.HTML)
			}
			if s := logs.String(); strings.Contains(s, "token=") || strings.Contains(s, "s3cret") {
				t.Errorf("the log holds the link or the password:\n%s", s)
			}
		})
	}
}

// A send that cannot be made securely, or at all, fails with an error and delivers nothing.
func TestSMTPSenderFails(t *testing.T) {
	serverTLS, roots := mailtest.NewTLSConfig(t)
	tests := []struct {
		name    string
		server  mailtest.Options
		url     func(addr string) string
		errPart string
	}{{
		name:    "STARTTLS required but not offered",
		url:     func(addr string) string { return "smtp://" + addr + "?tls=starttls" },
		errPart: "STARTTLS",
	}, {
		name:    "wrong password",
		server:  mailtest.Options{TLSConfig: serverTLS, Username: "relay", Password: "right"},
		url:     func(addr string) string { return "smtp://relay:wrong@" + addr },
		errPart: "AUTH",
	}, {
		name:    "the server demands AUTH and the URL has no user",
		server:  mailtest.Options{Username: "relay", Password: "right"},
		url:     func(addr string) string { return "smtp://" + addr },
		errPart: "authenticate",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.NewServer(t, tt.server)
			sender, err := mail.NewSMTPSender(tt.url(srv.Addr))
			if err != nil {
				t.Fatal(err)
			}
			sender.SetRootCAs(roots)
			err = sender.SendMagicLink(context.Background(), "consumer@example.com", link)
			if err == nil || !strings.Contains(err.Error(), tt.errPart) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.errPart)
			}
			if n := len(srv.Messages()); n != 0 {
				t.Fatalf("%d mails arrived", n)
			}
		})
	}
}

// A server that accepts the connection and never answers holds a send only until its context
// ends, not for the library's per-command timeout.
func TestSMTPSenderGivesUpWhenTheContextEnds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, silent
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})

	sender, err := mail.NewSMTPSender("smtp://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = sender.SendMagicLink(ctx, "consumer@example.com", link)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want one wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s", d)
	}
}

func TestNewSMTPSenderRejectsMalformedURLs(t *testing.T) {
	for _, raw := range []string{
		"http://mail.example.com",
		"smtp://",
		"smtp:mail.example.com",
		"mail.example.com:587",
		"smtp://user:s3cret@mail.example.com:99999",
		"smtp://user:s3cret@mail.example.com:port",
		"smtp://user:s3cret@mail.example.com/inbox",
		"smtp://user@mail.example.com",
		"smtp://:s3cret@mail.example.com",
		"smtp://mail.example.com?from=not-an-address",
		"smtp://mail.example.com?tls=maybe",
		"smtps://mail.example.com?tls=none",
		"smtp://mail.example.com?form=bgcheck%40example.com",
		"smtp://mail.example.com?from=a%40example.com&from=b%40example.com",
		"smtp://user:s3cret@mail.example.com?from=%zz",
		"smtp://user:s3cret%zz@mail.example.com",
	} {
		t.Run(raw, func(t *testing.T) {
			_, err := mail.New(raw, slog.New(slog.DiscardHandler))
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error repeats the password: %v", err)
			}
		})
	}
}

// Without BGCHECK_SMTP_URL links go to the log, as they always did in development.
func TestNewWithoutURLLogs(t *testing.T) {
	var logs syncBuffer
	sender, err := mail.New("", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sender.(mail.LogSender); !ok {
		t.Fatalf("New(\"\") = %T, want LogSender", sender)
	}
	if err := sender.SendMagicLink(context.Background(), "consumer@example.com", link); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), link) {
		t.Fatalf("the link is not in the log:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
