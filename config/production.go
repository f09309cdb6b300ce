package config

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// The two values of BGCHECK_ENV.
const (
	EnvProduction  = "production"
	EnvDevelopment = "development"
)

// DevelopmentSecretsKey encrypts secrets at rest in development when BGCHECK_SECRETS_KEY is not
// set, so that an API and workers started separately agree. It is published here: it protects
// nothing, and production mode refuses it.
const DevelopmentSecretsKey = "6267636865636b2d646576656c6f706d656e742d6b65792d7075626c69632121"

// SecretsKeys returns the keys for secrets at rest: BGCHECK_SECRETS_KEY and the previous keys,
// or DevelopmentSecretsKey in development when none is set.
func (c Config) SecretsKeys() (current string, previous []string) {
	if c.SecretsKey == "" && !c.Production() {
		return DevelopmentSecretsKey, c.SecretsPreviousKeys
	}
	return c.SecretsKey, c.SecretsPreviousKeys
}

// Process names a binary for CheckProduction: each refuses only what it uses.
type Process int

// The processes.
const (
	ProcessAPI Process = iota
	ProcessWorker
	ProcessCLI
)

// Production reports whether the binaries run in production mode.
func (c Config) Production() bool { return c.Env == EnvProduction }

// CheckProduction refuses, in production mode, the settings that are only safe on a developer's
// machine: no JWT signing key (the API would sign with a random one), no SMTP (sign-in links
// would be written to the log), private webhook URLs allowed (SSRF into the network), a
// database reached without TLS over the network, and no key for the secrets at rest. Each
// refusal is one line naming the variable; all of them come back at once, joined. In
// development it accepts everything.
func (c Config) CheckProduction(p Process) error {
	if !c.Production() {
		return nil
	}
	var errs []error
	refuse := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p == ProcessAPI && c.JWTSigningKey == "" {
		refuse("BGCHECK_JWT_SIGNING_KEY is required in production: set 32 or more random bytes (openssl rand -hex 32), or BGCHECK_ENV=development")
	}
	if p != ProcessCLI && c.SMTPURL == "" {
		refuse("BGCHECK_SMTP_URL is required in production: without it sign-in and invitation links would be written to the log")
	}
	if p != ProcessCLI && c.AllowPrivateWebhookURLs {
		refuse("BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS=true is refused in production: webhooks could reach the private network")
	}
	if err := databaseTLS(c.DatabaseURL); err != nil {
		refuse("DATABASE_URL: %v", err)
	}
	switch {
	case p != ProcessCLI && c.SecretsKey == "":
		refuse("BGCHECK_SECRETS_KEY is required in production: it encrypts webhook signing secrets at rest (openssl rand -hex 32)")
	case strings.EqualFold(strings.TrimSpace(c.SecretsKey), DevelopmentSecretsKey):
		refuse("BGCHECK_SECRETS_KEY is the published development key, refused in production (openssl rand -hex 32)")
	}
	return errors.Join(errs...)
}

// databaseTLS refuses a connection that may travel in plaintext to a host off this machine:
// sslmode disable, allow or prefer (the default, which falls back to plaintext when the server
// offers no TLS). Loopback addresses and Unix sockets never leave the machine.
func databaseTLS(url string) error {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return errors.New("cannot be parsed")
	}
	targets := []*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}
	targets = append(targets, cfg.Fallbacks...)
	for _, t := range targets {
		if t.TLSConfig == nil && !onThisMachine(t.Host) {
			return fmt.Errorf("the connection to %s may be unencrypted; set sslmode=require, verify-ca or verify-full (production mode)", t.Host)
		}
	}
	return nil
}

func onThisMachine(host string) bool {
	if strings.HasPrefix(host, "/") || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
