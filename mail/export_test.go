package mail

import "crypto/x509"

// SetRootCAs makes s trust the certificates of pool, such as a test server's self-signed one.
func (s *SMTPSender) SetRootCAs(pool *x509.CertPool) { s.tlsConfig.RootCAs = pool }
