// Package config reads the environment variables of API.md §9 into one struct, so every binary
// agrees on names and defaults.
package config

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bgcheck/bgcheck/netguard"
	"github.com/bgcheck/bgcheck/ratelimit"
)

// Defaults of API.md §9.
const (
	DefaultDatabaseURL       = "postgres://postgres@127.0.0.1:5432/bgcheck?sslmode=disable"
	DefaultTemporalAddress   = "127.0.0.1:7233"
	DefaultTemporalNamespace = "default"
	DefaultHTTPAddr          = ":8080"
	DefaultRetrySchedule     = "1m,5m,30m,2h,24h"
	DefaultPortalURL         = "http://localhost:8080"
	DefaultPublicURL         = "http://localhost:8080"
	DefaultWorkerMetricsAddr = ":9090"
	DefaultTemporalUIURL     = "http://127.0.0.1:8233"
)

// Config is everything the binaries read from the environment.
type Config struct {
	// Env is production (the default) or development (BGCHECK_ENV). Production refuses the
	// settings that are only safe on a developer's machine: see CheckProduction.
	Env                     string
	DatabaseURL             string
	TemporalAddress         string
	TemporalNamespace       string
	HTTPAddr                string
	AllowPrivateWebhookURLs bool
	RetrySchedule           string
	JWTSigningKey           string
	// JWTPreviousKeys still verify tokens during a key rotation (BGCHECK_JWT_PREVIOUS_KEYS,
	// comma-separated).
	JWTPreviousKeys []string
	// RedisURL holds the rate-limit counters of every API instance (BGCHECK_REDIS_URL,
	// redis://host:port/db); empty keeps them in each process's memory.
	RedisURL string
	// RedisPrefix starts the keys of the counters in Redis (BGCHECK_REDIS_PREFIX, default
	// ratelimit.DefaultPrefix), so deployments sharing one Redis keep apart.
	RedisPrefix string
	// RateLimits are the limits of API.md §7 (BGCHECK_RATE_LIMIT_AUTH, _CONSUMER and _PLATFORM:
	// "N/duration" or "off"). FromEnv starts from ratelimit.DefaultLimits; the zero value, as in
	// a Config built by hand, turns every class off.
	RateLimits ratelimit.Limits
	SMTPURL    string
	PortalURL  string
	// PublicURL is where browsers and identity providers reach the API (BGCHECK_PUBLIC_URL,
	// default DefaultPublicURL): the base of SSO callback URLs and of the dashboard they return to.
	PublicURL string
	// SSOPrivateNetworks are the non-public networks an identity provider may be reached on
	// (BGCHECK_SSO_PRIVATE_NETWORKS, CIDR prefixes): empty allows only public addresses.
	SSOPrivateNetworks []netip.Prefix
	// TemporalUIURL is where the admin dashboard links delivery workflows
	// (BGCHECK_TEMPORAL_UI_URL, default DefaultTemporalUIURL).
	TemporalUIURL  string
	TrustedProxies []netip.Prefix
	// TrustedProxyHeader is the one header trusted proxies name the client in
	// (BGCHECK_TRUSTED_PROXY_HEADER): X-Forwarded-For (the default) or Forwarded.
	TrustedProxyHeader string
	LogLevel           string
	// SecretsKey encrypts endpoint signing secrets at rest (BGCHECK_SECRETS_KEY: 32 bytes as 64
	// hex digits or base64); SecretsPreviousKeys (BGCHECK_SECRETS_PREVIOUS_KEYS) still decrypt
	// during a rotation. Empty in development means DevelopmentSecretsKey.
	SecretsKey          string
	SecretsPreviousKeys []string
	// SandboxSpeed divides the test-mode screening provider's delays (BGCHECK_SANDBOX_SPEED,
	// default 1: a county search takes three days; 86400 makes a day a second).
	SandboxSpeed float64
	// WorkerEndpointConcurrency and WorkerAccountConcurrency bound one worker's attempts in flight
	// to one endpoint and for one account (BGCHECK_WORKER_ENDPOINT_CONCURRENCY, default 50;
	// BGCHECK_WORKER_ACCOUNT_CONCURRENCY, default 100); attempts over them wait in Temporal.
	WorkerEndpointConcurrency int
	WorkerAccountConcurrency  int
	// WorkerConcurrency is how many delivery attempts one worker runs at once.
	WorkerConcurrency int
	// WorkerMetricsAddr is where a worker serves /metrics (BGCHECK_WORKER_METRICS_ADDR, default
	// DefaultWorkerMetricsAddr); "" (the variable set empty, or "off") serves none.
	WorkerMetricsAddr string
	// RetentionEvents is how old events get before the API deletes them with their deliveries
	// and attempts (BGCHECK_RETENTION_EVENTS: a Go duration, days as "90d", or "off"). FromEnv
	// starts from DefaultRetentionEvents; zero, as in a Config built by hand, keeps them forever.
	RetentionEvents time.Duration
	// SkipMigrations stops the API from migrating the database at start (BGCHECK_AUTO_MIGRATE=
	// false), for deployments that run `bgcheckctl migrate` as a step of their own; the API then
	// only checks that the schema is current. It is a negative so that the zero value, as in a
	// Config built by hand, keeps the old behaviour of migrating.
	SkipMigrations bool
	// EndpointDisableAfter is how long every delivery to an endpoint must have failed before it
	// is disabled automatically (BGCHECK_ENDPOINT_DISABLE_AFTER: a Go duration or days as "5d";
	// "off" never). FromEnv starts from DefaultEndpointDisableAfter; zero never disables.
	EndpointDisableAfter time.Duration
}

// DefaultEndpointDisableAfter is how long an endpoint may fail before it is disabled, unless
// BGCHECK_ENDPOINT_DISABLE_AFTER says otherwise.
const DefaultEndpointDisableAfter = 5 * 24 * time.Hour

// DefaultRetentionEvents is how long events are kept unless BGCHECK_RETENTION_EVENTS says
// otherwise.
const DefaultRetentionEvents = 90 * 24 * time.Hour

// FromEnv reads the configuration; a malformed value is an error that names the variable.
func FromEnv() (Config, error) {
	c := Config{
		Env:                 get("BGCHECK_ENV", EnvProduction),
		SecretsKey:          os.Getenv("BGCHECK_SECRETS_KEY"),
		SecretsPreviousKeys: splitList(os.Getenv("BGCHECK_SECRETS_PREVIOUS_KEYS")),
		DatabaseURL:         get("DATABASE_URL", DefaultDatabaseURL),
		TemporalAddress:     get("TEMPORAL_ADDRESS", DefaultTemporalAddress),
		TemporalNamespace:   get("TEMPORAL_NAMESPACE", DefaultTemporalNamespace),
		HTTPAddr:            get("BGCHECK_HTTP_ADDR", DefaultHTTPAddr),
		RetrySchedule:       get("BGCHECK_RETRY_SCHEDULE", DefaultRetrySchedule),
		JWTSigningKey:       os.Getenv("BGCHECK_JWT_SIGNING_KEY"),
		JWTPreviousKeys:     splitList(os.Getenv("BGCHECK_JWT_PREVIOUS_KEYS")),
		RedisURL:            os.Getenv("BGCHECK_REDIS_URL"),
		RedisPrefix:         get("BGCHECK_REDIS_PREFIX", ratelimit.DefaultPrefix),
		SMTPURL:             os.Getenv("BGCHECK_SMTP_URL"),
		PortalURL:           get("BGCHECK_PORTAL_URL", DefaultPortalURL),
		PublicURL:           strings.TrimRight(get("BGCHECK_PUBLIC_URL", DefaultPublicURL), "/"),
		TemporalUIURL:       strings.TrimRight(get("BGCHECK_TEMPORAL_UI_URL", DefaultTemporalUIURL), "/"),
		LogLevel:            get("BGCHECK_LOG_LEVEL", "info"),
	}
	c.WorkerMetricsAddr = DefaultWorkerMetricsAddr
	if v, ok := os.LookupEnv("BGCHECK_WORKER_METRICS_ADDR"); ok {
		c.WorkerMetricsAddr = strings.TrimSpace(v)
	}
	if strings.EqualFold(c.WorkerMetricsAddr, "off") {
		c.WorkerMetricsAddr = ""
	}
	if c.Env != EnvProduction && c.Env != EnvDevelopment {
		return c, fmt.Errorf("BGCHECK_ENV: %q is neither %s nor %s", c.Env, EnvProduction, EnvDevelopment)
	}
	var err error
	if c.AllowPrivateWebhookURLs, err = getBool("BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS", false); err != nil {
		return c, err
	}
	autoMigrate, err := getBool("BGCHECK_AUTO_MIGRATE", true)
	if err != nil {
		return c, err
	}
	c.SkipMigrations = !autoMigrate
	c.RetentionEvents = DefaultRetentionEvents
	if v := os.Getenv("BGCHECK_RETENTION_EVENTS"); v != "" {
		if c.RetentionEvents, err = ParseRetention(v); err != nil {
			return c, fmt.Errorf("BGCHECK_RETENTION_EVENTS: %w", err)
		}
	}
	if c.WorkerConcurrency, err = getInt("BGCHECK_WORKER_CONCURRENCY", 200); err != nil {
		return c, err
	}
	c.SandboxSpeed = 1
	if v := os.Getenv("BGCHECK_SANDBOX_SPEED"); v != "" {
		if c.SandboxSpeed, err = strconv.ParseFloat(v, 64); err != nil || c.SandboxSpeed <= 0 || math.IsInf(c.SandboxSpeed, 0) {
			return c, fmt.Errorf("BGCHECK_SANDBOX_SPEED: %q is not a positive number", v)
		}
	}
	if c.WorkerEndpointConcurrency, err = getInt("BGCHECK_WORKER_ENDPOINT_CONCURRENCY", 50); err != nil {
		return c, err
	}
	if c.WorkerAccountConcurrency, err = getInt("BGCHECK_WORKER_ACCOUNT_CONCURRENCY", 100); err != nil {
		return c, err
	}
	c.EndpointDisableAfter = DefaultEndpointDisableAfter
	if v, ok := os.LookupEnv("BGCHECK_ENDPOINT_DISABLE_AFTER"); ok {
		if c.EndpointDisableAfter, err = ParseRetention(v); err != nil {
			return c, fmt.Errorf("BGCHECK_ENDPOINT_DISABLE_AFTER: %w", err)
		}
	}
	if _, err := ParseSchedule(c.RetrySchedule); err != nil {
		return c, fmt.Errorf("BGCHECK_RETRY_SCHEDULE: %w", err)
	}
	if c.SSOPrivateNetworks, err = netguard.ParsePrefixes(os.Getenv("BGCHECK_SSO_PRIVATE_NETWORKS")); err != nil {
		return c, fmt.Errorf("BGCHECK_SSO_PRIVATE_NETWORKS: %w", err)
	}
	if u, err := url.Parse(c.PublicURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return c, fmt.Errorf("BGCHECK_PUBLIC_URL: %q is not an absolute http(s) URL", c.PublicURL)
	}
	if c.TrustedProxies, err = netguard.ParsePrefixes(os.Getenv("BGCHECK_TRUSTED_PROXIES")); err != nil {
		return c, fmt.Errorf("BGCHECK_TRUSTED_PROXIES: %w", err)
	}
	switch h := strings.ToLower(get("BGCHECK_TRUSTED_PROXY_HEADER", "x-forwarded-for")); h {
	case "x-forwarded-for":
		c.TrustedProxyHeader = "X-Forwarded-For"
	case "forwarded":
		c.TrustedProxyHeader = "Forwarded"
	default:
		return c, fmt.Errorf("BGCHECK_TRUSTED_PROXY_HEADER: %q is neither X-Forwarded-For nor Forwarded", h)
	}
	c.RateLimits = ratelimit.DefaultLimits()
	for _, l := range []struct {
		name string
		rule *ratelimit.Rule
	}{
		{"BGCHECK_RATE_LIMIT_AUTH", &c.RateLimits.Auth},
		{"BGCHECK_RATE_LIMIT_CONSUMER", &c.RateLimits.Consumer},
		{"BGCHECK_RATE_LIMIT_PLATFORM", &c.RateLimits.Platform},
	} {
		if v := os.Getenv(l.name); v != "" {
			if *l.rule, err = ratelimit.ParseRule(v); err != nil {
				return c, fmt.Errorf("%s: %w", l.name, err)
			}
		}
	}
	return c, nil
}

// ParseRetention reads a retention age: a Go duration ("2160h"), whole days ("90d"), or "off",
// which is zero: keep forever.
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%q is not a positive number of days such as 90d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration such as 90d or 720h, nor off", s)
	}
	return d, nil
}

// ParseSchedule reads a retry schedule: comma-separated Go durations ("1m,5m,30m,2h,24h"), the
// wait after each failed attempt. Every wait must be positive; "" is DefaultRetrySchedule.
func ParseSchedule(s string) ([]time.Duration, error) {
	if s == "" {
		s = DefaultRetrySchedule
	}
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive duration such as 5m or 2h", strings.TrimSpace(f))
		}
		out = append(out, d)
	}
	return out, nil
}

func getInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s: %q is not a positive whole number", name, v)
	}
	return n, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func get(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func getBool(name string, def bool) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not true or false", name, v)
	}
	return b, nil
}
