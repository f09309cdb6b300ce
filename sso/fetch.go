package sso

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/bgcheck/bgcheck/netguard"
)

// MetadataError is IdP metadata that cannot be fetched or used. Reason, in our words, is what
// the admin is told; Cause, a library's own words, can quote the resolver's address, the
// addresses dialled or the document, so it goes to the log only.
type MetadataError struct {
	Reason string
	Cause  error
}

func (e *MetadataError) Error() string {
	if e.Cause == nil {
		return e.Reason
	}
	return e.Reason + ": " + e.Cause.Error()
}

// Unwrap gives the library's error, for the log and for errors.Is.
func (e *MetadataError) Unwrap() error { return e.Cause }

// ReasonOf is what an error from reading or fetching metadata says in our words: a
// MetadataError's Reason, or a generic sentence for anything else.
func ReasonOf(err error) string {
	var me *MetadataError
	if errors.As(err, &me) {
		return me.Reason
	}
	return "the metadata could not be used"
}

func metadataError(cause error, format string, args ...any) error {
	return &MetadataError{Reason: fmt.Sprintf(format, args...), Cause: cause}
}

// FetchMetadata downloads metadata from url with client (the address guard applies), refusing
// anything but http(s), an answer other than 200, and more than MaxMetadataBytes. Its errors
// are *MetadataError.
func FetchMetadata(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return nil, metadataError(nil, "the metadata URL must be an http or https URL")
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, metadataError(err, "the metadata URL must be an http or https URL")
	}
	req.Header.Set("Accept", "application/samlmetadata+xml, application/xml, text/xml")
	resp, err := client.Do(req)
	if err != nil {
		return nil, metadataError(err, "the metadata URL could not be fetched: %s", ConnectionProblem(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// The status line's text is the server's to choose: only the number is repeated.
		return nil, metadataError(nil, "the metadata URL answered HTTP %d (%s), not 200", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetadataBytes+1))
	if err != nil {
		return nil, metadataError(err, "the metadata URL's answer could not be read: %s", ConnectionProblem(err))
	}
	if len(body) > MaxMetadataBytes {
		return nil, metadataError(nil, "the metadata at the URL is larger than %d bytes", MaxMetadataBytes)
	}
	return body, nil
}

// IsConnectionFailure reports whether err is a request that got no HTTP answer at all (as
// opposed to an answer that was wrong).
func IsConnectionFailure(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// ConnectionProblem says in our words why a request to an identity provider failed: the
// resolver, dialler and TLS stack name addresses (the resolver's among them) an answer must
// not repeat.
func ConnectionProblem(err error) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	switch {
	case errors.Is(err, netguard.ErrBlockedAddress):
		return "the host is at a private, loopback or link-local address, which this service may not reach"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "the host was not found"
	case errors.As(err, &dnsErr) && dnsErr.IsTimeout:
		return "the host name could not be resolved in time"
	case errors.As(err, &dnsErr):
		return "the host name could not be resolved"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the host refused the connection"
	case errors.Is(err, errTooManyRedirects):
		return "it redirected more than 3 times"
	case errors.Is(err, errInsecureRedirect):
		return "it redirected from https to plain http"
	case errors.Is(err, errBodyTooLarge):
		return fmt.Sprintf("its answer is larger than %d bytes", MaxIdPResponseBytes)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("the host did not answer within %s", FetchTimeout)
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidCert):
		return "the host's TLS certificate is not valid for it"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the host closed the connection"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the host cannot be reached from this service"
	case strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "http: server gave HTTP response to HTTPS client"):
		return "the TLS handshake failed"
	}
	return "the connection failed"
}
