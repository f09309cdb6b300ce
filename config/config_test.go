package config_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/ratelimit"
)

func TestRateLimitsFromEnv(t *testing.T) {
	for _, name := range []string{"BGCHECK_RATE_LIMIT_AUTH", "BGCHECK_RATE_LIMIT_CONSUMER", "BGCHECK_RATE_LIMIT_PLATFORM", "BGCHECK_REDIS_URL", "BGCHECK_REDIS_PREFIX"} {
		t.Setenv(name, "")
	}
	c, err := config.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if want := (ratelimit.Limits{
		Auth:     ratelimit.Rule{Limit: 10, Window: time.Minute},
		Consumer: ratelimit.Rule{Limit: 60, Window: time.Minute},
		Platform: ratelimit.Rule{Limit: 120, Window: time.Minute},
	}); c.RateLimits != want || c.RedisURL != "" || c.RedisPrefix != ratelimit.DefaultPrefix {
		t.Fatalf("defaults: %+v, Redis %q; want API.md §7's %+v in memory", c.RateLimits, c.RedisURL, want)
	}

	t.Setenv("BGCHECK_RATE_LIMIT_AUTH", "off")
	t.Setenv("BGCHECK_RATE_LIMIT_PLATFORM", "1000/10s")
	t.Setenv("BGCHECK_REDIS_URL", "redis://10.0.0.5:6379/2")
	if c, err = config.FromEnv(); err != nil {
		t.Fatal(err)
	}
	if !c.RateLimits.Auth.Off() || c.RateLimits.Consumer.Limit != 60 ||
		c.RateLimits.Platform != (ratelimit.Rule{Limit: 1000, Window: 10 * time.Second}) || c.RedisURL != "redis://10.0.0.5:6379/2" {
		t.Fatalf("overridden: %+v, Redis %q", c.RateLimits, c.RedisURL)
	}

	t.Setenv("BGCHECK_RATE_LIMIT_CONSUMER", "60 per minute")
	if _, err = config.FromEnv(); err == nil || !strings.Contains(err.Error(), "BGCHECK_RATE_LIMIT_CONSUMER") {
		t.Fatalf("a malformed limit: %v, want an error naming the variable", err)
	}
}

func TestWorkerMetricsAddrFromEnv(t *testing.T) {
	for _, c := range []struct {
		value string
		unset bool
		want  string
	}{
		{unset: true, want: ":9090"},
		{value: "127.0.0.1:9191", want: "127.0.0.1:9191"},
		{value: "off", want: ""},
		{value: "OFF", want: ""},
		{value: "", want: ""}, // set but empty: off, not the default
	} {
		t.Setenv("BGCHECK_WORKER_METRICS_ADDR", c.value)
		if c.unset {
			os.Unsetenv("BGCHECK_WORKER_METRICS_ADDR") // t.Setenv restores it when the test ends
		}
		cfg, err := config.FromEnv()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.WorkerMetricsAddr != c.want {
			t.Errorf("BGCHECK_WORKER_METRICS_ADDR=%q (unset %v): %q, want %q", c.value, c.unset, cfg.WorkerMetricsAddr, c.want)
		}
	}
}

func TestRetentionAndMigrationFromEnv(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		retention, autoMigrate string
		want                   time.Duration
		skip                   bool
		err                    string
	}{
		{"", "", 90 * day, false, ""},
		{"30d", "false", 30 * day, true, ""},
		{"720h", "true", 30 * day, false, ""},
		{"off", "", 0, false, ""},
		{"0d", "", 0, false, "BGCHECK_RETENTION_EVENTS"},
		{"-5h", "", 0, false, "BGCHECK_RETENTION_EVENTS"},
		{"ninety days", "", 0, false, "BGCHECK_RETENTION_EVENTS"},
		{"", "sometimes", 0, false, "BGCHECK_AUTO_MIGRATE"},
	} {
		t.Setenv("BGCHECK_RETENTION_EVENTS", c.retention)
		t.Setenv("BGCHECK_AUTO_MIGRATE", c.autoMigrate)
		cfg, err := config.FromEnv()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q/%q: error %v, want one naming %s", c.retention, c.autoMigrate, err, c.err)
			}
			continue
		}
		if err != nil || cfg.RetentionEvents != c.want || cfg.SkipMigrations != c.skip {
			t.Errorf("%q/%q: retention %s, skip migrations %v, %v; want %s, %v", c.retention, c.autoMigrate,
				cfg.RetentionEvents, cfg.SkipMigrations, err, c.want, c.skip)
		}
	}
}
