package sso

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// A metadata URL that fails says why in our words; the resolver's, dialler's and TLS stack's
// own words (which name addresses, the resolver's among them) stay in the error's cause.
func TestFetchMetadataSaysWhatWentWrongInOurWords(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := "http://" + ln.Addr().String() + "/metadata"
	ln.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // our client's refusal of its certificate
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer slow.Close()
	defer close(hang)

	for _, tc := range []struct {
		name, url string
		allowed   []netip.Prefix
		timeout   time.Duration
		want      string
	}{
		{"refused", closedPort, loopback, 0, "the metadata URL could not be fetched: the host refused the connection"},
		{"a private address", missing.URL + "/metadata", nil, 0, "could not be fetched: the host is at a private, loopback or link-local address"},
		{"404", missing.URL + "/metadata", loopback, 0, "the metadata URL answered HTTP 404 (Not Found), not 200"},
		{"an untrusted certificate", tlsSrv.URL + "/metadata", loopback, 0, "could not be fetched: the host's TLS certificate is not valid for it"},
		{"no answer in time", slow.URL + "/metadata", loopback, 200 * time.Millisecond, "could not be fetched: the host did not answer within"},
		{"not http", "ftp://idp.example.com/md", nil, 0, "must be an http or https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			_, err := FetchMetadata(ctx, NewHTTPClient(tc.allowed), tc.url)
			reason := ReasonOf(err)
			if err == nil || !strings.Contains(reason, tc.want) {
				t.Fatalf("reason %q (err %v), want one saying %q", reason, err, tc.want)
			}
			for _, leak := range []string{"dial tcp", "127.0.0.1", "x509:", "tls:", "Get \"", "context deadline"} {
				if strings.Contains(reason, leak) {
					t.Fatalf("the reason %q repeats the library's %q", reason, leak)
				}
			}
		})
	}
}

func TestConnectionProblemOfAResolverFailure(t *testing.T) {
	notFound := &url.Error{Op: "Get", URL: "https://nonexistent.invalid/md", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "nonexistent.invalid", Server: "10.255.255.53:53", IsNotFound: true}}}
	if got := ConnectionProblem(notFound); got != "the host was not found" {
		t.Fatalf("got %q", got)
	}
	broken := &url.Error{Op: "Get", URL: "https://idp.example.com/md", Err: &net.DNSError{Err: "server misbehaving", Server: "10.255.255.53:53"}}
	if got := ConnectionProblem(broken); got != "the host name could not be resolved" {
		t.Fatalf("got %q", got)
	}
	if got := ConnectionProblem(errors.New("something new")); got != "the connection failed" {
		t.Fatalf("got %q", got)
	}
}
