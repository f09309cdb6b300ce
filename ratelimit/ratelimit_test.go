package ratelimit_test

import (
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/ratelimit"
)

func TestParseRule(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ratelimit.Rule
		str  string
	}{
		{"10/1m", ratelimit.Rule{Limit: 10, Window: time.Minute}, "10/1m"},
		{" 120 / 60s ", ratelimit.Rule{Limit: 120, Window: time.Minute}, "120/1m"},
		{"5000/1h", ratelimit.Rule{Limit: 5000, Window: time.Hour}, "5000/1h"},
		{"2/1500ms", ratelimit.Rule{Limit: 2, Window: 1500 * time.Millisecond}, "2/1.5s"},
		{"3/1h30m", ratelimit.Rule{Limit: 3, Window: 90 * time.Minute}, "3/1h30m"},
		{"off", ratelimit.Rule{}, "off"},
		{"OFF", ratelimit.Rule{}, "off"},
	} {
		got, err := ratelimit.ParseRule(c.in)
		if err != nil || got != c.want || got.String() != c.str {
			t.Errorf("ParseRule(%q) = %+v (%s), %v; want %+v (%s)", c.in, got, got, err, c.want, c.str)
		}
		if again, err := ratelimit.ParseRule(got.String()); err != nil || again != got {
			t.Errorf("%q does not read back: %+v %v", got.String(), again, err)
		}
	}
	for _, bad := range []string{"", "10", "0/1m", "-1/1m", "10/", "10/0s", "10/500ms", "ten/1m", "10/1 minute", "10/-1m", "on"} {
		if r, err := ratelimit.ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) = %+v, want an error", bad, r)
		}
	}
}
