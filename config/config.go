// Package config reads the environment variables of API.md §9 into one struct, so every binary
// agrees on names and defaults.
package config

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

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
	DefaultWorkerMetricsAddr = ":9090"
	DefaultTemporalUIURL     = "http://127.0.0.1:8233"
)

// Config is everything the binaries read from the environment.
type Config struct {
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
	// TemporalUIURL is where the admin dashboard links delivery workflows
	// (BGCHECK_TEMPORAL_UI_URL, default DefaultTemporalUIURL).
	TemporalUIURL  string
	TrustedProxies []netip.Prefix
	LogLevel       string
	// WorkerConcurrency is how many delivery attempts one worker runs at once.
	WorkerConcurrency int
	// WorkerMetricsAddr is where a worker serves /metrics (BGCHECK_WORKER_METRICS_ADDR, default
	// DefaultWorkerMetricsAddr); "" (the variable set empty, or "off") serves none.
	WorkerMetricsAddr string
}

// FromEnv reads the configuration; a malformed value is an error that names the variable.
func FromEnv() (Config, error) {
	c := Config{
		DatabaseURL:       get("DATABASE_URL", DefaultDatabaseURL),
		TemporalAddress:   get("TEMPORAL_ADDRESS", DefaultTemporalAddress),
		TemporalNamespace: get("TEMPORAL_NAMESPACE", DefaultTemporalNamespace),
		HTTPAddr:          get("BGCHECK_HTTP_ADDR", DefaultHTTPAddr),
		RetrySchedule:     get("BGCHECK_RETRY_SCHEDULE", DefaultRetrySchedule),
		JWTSigningKey:     os.Getenv("BGCHECK_JWT_SIGNING_KEY"),
		JWTPreviousKeys:   splitList(os.Getenv("BGCHECK_JWT_PREVIOUS_KEYS")),
		RedisURL:          os.Getenv("BGCHECK_REDIS_URL"),
		RedisPrefix:       get("BGCHECK_REDIS_PREFIX", ratelimit.DefaultPrefix),
		SMTPURL:           os.Getenv("BGCHECK_SMTP_URL"),
		PortalURL:         get("BGCHECK_PORTAL_URL", DefaultPortalURL),
		TemporalUIURL:     strings.TrimRight(get("BGCHECK_TEMPORAL_UI_URL", DefaultTemporalUIURL), "/"),
		LogLevel:          get("BGCHECK_LOG_LEVEL", "info"),
	}
	c.WorkerMetricsAddr = DefaultWorkerMetricsAddr
	if v, ok := os.LookupEnv("BGCHECK_WORKER_METRICS_ADDR"); ok {
		c.WorkerMetricsAddr = strings.TrimSpace(v)
	}
	if strings.EqualFold(c.WorkerMetricsAddr, "off") {
		c.WorkerMetricsAddr = ""
	}
	var err error
	if c.AllowPrivateWebhookURLs, err = getBool("BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS", false); err != nil {
		return c, err
	}
	if c.WorkerConcurrency, err = getInt("BGCHECK_WORKER_CONCURRENCY", 200); err != nil {
		return c, err
	}
	if _, err := ParseSchedule(c.RetrySchedule); err != nil {
		return c, fmt.Errorf("BGCHECK_RETRY_SCHEDULE: %w", err)
	}
	if c.TrustedProxies, err = ParsePrefixes(os.Getenv("BGCHECK_TRUSTED_PROXIES")); err != nil {
		return c, fmt.Errorf("BGCHECK_TRUSTED_PROXIES: %w", err)
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

// ParsePrefixes reads a comma-separated list of IP addresses and CIDR prefixes; a bare address
// is a prefix of one address.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := ParsePrefix(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ParsePrefix reads an IP address or CIDR prefix, v4 or v6, and returns it masked.
func ParsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
		}
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-unmapBits(p)).Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// unmapBits is how many leading bits an IPv4-mapped IPv6 prefix loses when written as IPv4.
func unmapBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return 96
	}
	return 0
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
