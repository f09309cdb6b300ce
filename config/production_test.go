package config_test

import (
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck/config"
)

// safe is a production configuration every process accepts.
func safe() config.Config {
	return config.Config{
		Env:           config.EnvProduction,
		DatabaseURL:   "postgres://bgcheck@db.internal:5432/bgcheck?sslmode=verify-full",
		JWTSigningKey: strings.Repeat("k", 32),
		SMTPURL:       "smtp://mail.internal:587",
		SecretsKey:    strings.Repeat("ab", 32),
	}
}

func TestProductionModeRefusesUnsafeSettings(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*config.Config)
		process config.Process
		want    string // the variable the one line names; "" means accepted
	}{
		{"safe", func(*config.Config) {}, config.ProcessAPI, ""},
		{"no JWT key", func(c *config.Config) { c.JWTSigningKey = "" }, config.ProcessAPI, "BGCHECK_JWT_SIGNING_KEY"},
		{"no JWT key, worker", func(c *config.Config) { c.JWTSigningKey = "" }, config.ProcessWorker, ""},
		{"no SMTP", func(c *config.Config) { c.SMTPURL = "" }, config.ProcessAPI, "BGCHECK_SMTP_URL"},
		{"private webhooks, API", func(c *config.Config) { c.AllowPrivateWebhookURLs = true }, config.ProcessAPI, "BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS"},
		{"private webhooks, worker", func(c *config.Config) { c.AllowPrivateWebhookURLs = true }, config.ProcessWorker, "BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS"},
		{"no secrets key", func(c *config.Config) { c.SecretsKey = "" }, config.ProcessWorker, "BGCHECK_SECRETS_KEY"},
		{"sslmode=disable to a remote host", func(c *config.Config) {
			c.DatabaseURL = "postgres://bgcheck@db.internal/bgcheck?sslmode=disable"
		}, config.ProcessCLI, "DATABASE_URL"},
		{"sslmode=prefer falls back to plaintext", func(c *config.Config) {
			c.DatabaseURL = "postgres://bgcheck@10.0.0.5/bgcheck?sslmode=prefer"
		}, config.ProcessWorker, "DATABASE_URL"},
		{"no sslmode (prefer)", func(c *config.Config) { c.DatabaseURL = "postgres://bgcheck@db.internal/bgcheck" }, config.ProcessAPI, "DATABASE_URL"},
		{"keyword form", func(c *config.Config) { c.DatabaseURL = "host=db.internal user=bgcheck sslmode=allow" }, config.ProcessAPI, "DATABASE_URL"},
		{"sslmode=require", func(c *config.Config) { c.DatabaseURL = "postgres://bgcheck@db.internal/bgcheck?sslmode=require" }, config.ProcessAPI, ""},
		{"loopback without TLS", func(c *config.Config) { c.DatabaseURL = config.DefaultDatabaseURL }, config.ProcessAPI, ""},
		{"IPv6 loopback without TLS", func(c *config.Config) { c.DatabaseURL = "postgres://bgcheck@[::1]/bgcheck?sslmode=disable" }, config.ProcessAPI, ""},
		{"Unix socket", func(c *config.Config) { c.DatabaseURL = "host=/var/run/postgresql user=bgcheck sslmode=disable" }, config.ProcessAPI, ""},
		{"development accepts anything", func(c *config.Config) {
			*c = config.Config{Env: config.EnvDevelopment, AllowPrivateWebhookURLs: true, DatabaseURL: "postgres://x@db.internal/x?sslmode=disable"}
		}, config.ProcessAPI, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := safe()
			c.mutate(&cfg)
			err := cfg.CheckProduction(c.process)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], c.want) {
				t.Fatalf("refusal %q: want one line starting with %s", err, c.want)
			}
		})
	}
	// Everything wrong at once: one line per variable.
	all := config.Config{Env: config.EnvProduction, DatabaseURL: "postgres://x@db.internal/x?sslmode=disable", AllowPrivateWebhookURLs: true}
	if n := len(strings.Split(all.CheckProduction(config.ProcessAPI).Error(), "\n")); n != 5 {
		t.Fatalf("%d lines for five problems", n)
	}
}

func TestEnvDefaultsToProduction(t *testing.T) {
	t.Setenv("BGCHECK_ENV", "")
	cfg, err := config.FromEnv()
	if err != nil || !cfg.Production() {
		t.Fatalf("env %q err %v", cfg.Env, err)
	}
	t.Setenv("BGCHECK_ENV", "staging")
	if _, err := config.FromEnv(); err == nil || !strings.Contains(err.Error(), "BGCHECK_ENV") {
		t.Fatalf("err %v", err)
	}
}
