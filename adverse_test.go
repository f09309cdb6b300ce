package bgcheck_test

import (
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
)

func TestAddBusinessDays(t *testing.T) {
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	for _, c := range []struct{ from, want string }{
		{"2026-11-23T10:00:00Z", "2026-11-30T10:00:00Z"}, // Monday → next Monday
		{"2026-11-27T10:00:00Z", "2026-12-04T10:00:00Z"}, // Friday → next Friday
		{"2026-11-28T10:00:00Z", "2026-12-04T10:00:00Z"}, // Saturday → Friday
		{"2026-11-29T23:00:00Z", "2026-12-04T23:00:00Z"}, // Sunday → Friday
		{"2026-11-25T10:00:00Z", "2026-12-02T10:00:00Z"}, // Wednesday → Wednesday, across a weekend
	} {
		if got := bgcheck.AddBusinessDays(at(c.from), 5); !got.Equal(at(c.want)) {
			t.Errorf("5 business days after %s: %s, want %s (%s)", c.from, got.Format(time.RFC3339), c.want, at(c.from).Weekday())
		}
	}
	if got := bgcheck.AddBusinessDays(at("2026-11-27T10:00:00Z"), 1); !got.Equal(at("2026-11-30T10:00:00Z")) {
		t.Errorf("1 business day after a Friday: %s", got)
	}
}
