package screening_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/screening"
)

func TestCatalogue(t *testing.T) {
	want := []struct {
		slug, name string
		screenings []screening.Type
	}{
		{"basic", "Basic", []screening.Type{"ssn_trace", "national_criminal"}},
		{"standard", "Standard", []screening.Type{"ssn_trace", "national_criminal", "county_criminal", "sex_offender"}},
		{"driver", "Driver", []screening.Type{"ssn_trace", "national_criminal", "county_criminal", "sex_offender", "motor_vehicle"}},
		{"employment", "Employment", []screening.Type{"ssn_trace", "national_criminal", "county_criminal", "sex_offender",
			"employment_verification", "education_verification"}},
	}
	got := screening.Catalogue()
	if len(got) != len(want) {
		t.Fatalf("Catalogue() has %d packages, want %d", len(got), len(want))
	}
	for i, w := range want {
		p := got[i]
		if p.Slug != w.slug || p.Name != w.name || !slices.Equal(p.Screenings, w.screenings) {
			t.Errorf("Catalogue()[%d] = %+v, want %s %q %v", i, p, w.slug, w.name, w.screenings)
		}
		for _, st := range p.Screenings {
			if !st.Valid() {
				t.Errorf("package %s lists unknown type %q", p.Slug, st)
			}
		}
		found, ok := screening.FindPackage(w.slug)
		if !ok || !slices.Equal(found.Screenings, w.screenings) {
			t.Errorf("FindPackage(%q) = %+v, %v", w.slug, found, ok)
		}
	}
}

func TestFindPackageUnknown(t *testing.T) {
	for _, slug := range []string{"", "Basic", "basic_plus", "premium"} {
		if p, ok := screening.FindPackage(slug); ok {
			t.Errorf("FindPackage(%q) = %+v, true; want false", slug, p)
		}
	}
}

// The catalogue is shared process-wide, so a caller editing what it got back must not change
// what the next request lists.
func TestCatalogueReturnsCopies(t *testing.T) {
	got := screening.Catalogue()
	got[0].Screenings[0] = "tampered"
	p, _ := screening.FindPackage("standard")
	p.Screenings[0] = "tampered"
	if s := screening.Catalogue()[0].Screenings[0]; s != screening.TypeSSNTrace {
		t.Errorf("Catalogue changed through a returned slice: basic starts with %q", s)
	}
	if p, _ := screening.FindPackage("standard"); p.Screenings[0] != screening.TypeSSNTrace {
		t.Errorf("FindPackage changed through a returned slice: standard starts with %q", p.Screenings[0])
	}
}

// The JSON shape is the body of GET /api/v1/packages, which integrations parse.
func TestPackageJSON(t *testing.T) {
	p, _ := screening.FindPackage("basic")
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"slug":"basic","name":"Basic","screenings":["ssn_trace","national_criminal"],"price_cents":2999}`
	if string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
}

func TestTypeValid(t *testing.T) {
	for _, tc := range []struct {
		typ  screening.Type
		want bool
	}{
		{screening.TypeSSNTrace, true},
		{screening.TypeEducationVerification, true},
		{"", false},
		{"drug_screening", false},
		{"SSN_TRACE", false},
	} {
		if got := tc.typ.Valid(); got != tc.want {
			t.Errorf("Type(%q).Valid() = %v, want %v", tc.typ, got, tc.want)
		}
	}
}

// realDelays restates the documented turnaround times, so a change to the sandbox's table shows
// up here as a decision rather than slipping through.
var realDelays = map[screening.Type]time.Duration{
	screening.TypeSSNTrace:               time.Minute,
	screening.TypeSexOffender:            30 * time.Minute,
	screening.TypeNationalCriminal:       time.Hour,
	screening.TypeMotorVehicle:           2 * time.Hour,
	screening.TypeEmploymentVerification: 48 * time.Hour,
	screening.TypeEducationVerification:  48 * time.Hour,
	screening.TypeCountyCriminal:         72 * time.Hour,
}

var submitted = time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)

func screen(t *testing.T, sb *screening.Sandbox, ssn string, typ screening.Type, now time.Time) screening.Outcome {
	t.Helper()
	out, err := sb.Screen(context.Background(), screening.Request{
		ScreeningType: typ, Candidate: screening.Subject{FirstName: "Ada", LastName: "Lovelace", SSN: ssn},
		SubmittedAt: submitted, Now: now,
	})
	if err != nil {
		t.Fatalf("Screen(%q, %s) at +%v: %v", ssn, typ, now.Sub(submitted), err)
	}
	return out
}

func isCriminal(typ screening.Type) bool {
	return typ == screening.TypeNationalCriminal || typ == screening.TypeCountyCriminal || typ == screening.TypeSexOffender
}

// Every documented SSN, in every spelling that must match, for every screening type: pending
// one nanosecond before the type's delay, and the documented outcome at it.
func TestSandboxOutcomes(t *testing.T) {
	type want struct {
		status screening.Status
		result screening.Result
		reason string
	}
	allClear := func(screening.Type) want { return want{screening.StatusComplete, screening.ResultClear, ""} }
	consider := func(typ screening.Type) want {
		if isCriminal(typ) {
			return want{screening.StatusComplete, screening.ResultConsider, ""}
		}
		return allClear(typ)
	}
	suspended := func(typ screening.Type) want {
		if typ == screening.TypeSSNTrace {
			return want{screening.StatusSuspended, "", "waiting for the candidate"}
		}
		return allClear(typ)
	}
	failed := func(screening.Type) want {
		return want{screening.StatusFailed, "", "the provider could not complete the search"}
	}
	tests := []struct {
		ssn  string
		want func(screening.Type) want
	}{
		{"111-11-2001", allClear},
		{"111112001", allClear},
		{"111-11-2002", consider},
		{"111112002", consider},
		{" 111 11 2002 ", consider},
		{"111-11-2003", suspended},
		{"111112003", suspended},
		{"111-11-2004", failed},
		{"111112004", failed},
		{"", allClear},
		{"123-45-6789", allClear},
		{"111-11-20021", allClear}, // one digit too many is a different number
	}
	sb := screening.NewSandbox(1)
	for _, tc := range tests {
		for typ, delay := range realDelays {
			early := screen(t, sb, tc.ssn, typ, submitted.Add(delay-time.Nanosecond))
			if early.Status != screening.StatusPending || early.RetryAfter != time.Nanosecond || early.Result != "" {
				t.Errorf("%q %s just before its delay = %+v, want pending with 1ns to go", tc.ssn, typ, early)
			}
			got := screen(t, sb, tc.ssn, typ, submitted.Add(delay))
			w := tc.want(typ)
			if got.Status != w.status || got.Result != w.result || got.Reason != w.reason || got.RetryAfter != 0 {
				t.Errorf("%q %s = %+v, want %+v", tc.ssn, typ, got, w)
			}
			wantRecords := 0
			if w.result == screening.ResultConsider {
				wantRecords = 1
			}
			if len(got.Records) != wantRecords {
				t.Fatalf("%q %s has %d records, want %d", tc.ssn, typ, len(got.Records), wantRecords)
			}
			for _, r := range got.Records {
				if r.Description == "" || r.Classification == "" || r.Jurisdiction == "" || len(r.Date) != len("2006-01-02") {
					t.Errorf("%q %s record is incomplete: %+v", tc.ssn, typ, r)
				}
			}
		}
	}
}

// A suspended SSN trace resumes once the workflow asks again with the corrected SSN.
func TestSandboxSuspendedResumesWithCorrectedSSN(t *testing.T) {
	sb := screening.NewSandbox(1)
	now := submitted.Add(time.Hour)
	if got := screen(t, sb, screening.SandboxSSNSuspended, screening.TypeSSNTrace, now); got.Status != screening.StatusSuspended {
		t.Fatalf("before the update: %+v, want suspended", got)
	}
	if got := screen(t, sb, screening.SandboxSSNClear, screening.TypeSSNTrace, now); got.Status != screening.StatusComplete {
		t.Errorf("after the update: %+v, want complete", got)
	}
}

func TestSandboxRetryAfterIsTimeRemaining(t *testing.T) {
	tests := []struct {
		elapsed, want time.Duration
	}{
		{0, 72 * time.Hour},
		{time.Hour, 71 * time.Hour},
		{72*time.Hour - time.Second, time.Second},
		{-time.Hour, 72 * time.Hour}, // Now before SubmittedAt counts as no time elapsed
	}
	sb := screening.NewSandbox(1)
	for _, tc := range tests {
		got := screen(t, sb, screening.SandboxSSNClear, screening.TypeCountyCriminal, submitted.Add(tc.elapsed))
		if got.Status != screening.StatusPending || got.RetryAfter != tc.want {
			t.Errorf("county at +%v = %+v, want pending with RetryAfter %v", tc.elapsed, got, tc.want)
		}
	}
}

func TestSandboxSpeedScalesDelays(t *testing.T) {
	tests := []struct {
		speed     float64
		typ       screening.Type
		elapsed   time.Duration
		wantRetry time.Duration // 0: complete
	}{
		{86400, screening.TypeCountyCriminal, 0, 3 * time.Second},
		{86400, screening.TypeCountyCriminal, 2999 * time.Millisecond, time.Millisecond},
		{86400, screening.TypeCountyCriminal, 3 * time.Second, 0},
		{86400, screening.TypeSSNTrace, 0, 694444}, // 60s/86400, truncated to the nanosecond
		{3600, screening.TypeNationalCriminal, 999 * time.Millisecond, time.Millisecond},
		{3600, screening.TypeNationalCriminal, time.Second, 0},
		{0.5, screening.TypeSSNTrace, time.Minute, time.Minute}, // below 1 slows the sandbox down
	}
	for _, tc := range tests {
		got := screen(t, screening.NewSandbox(tc.speed), screening.SandboxSSNClear, tc.typ, submitted.Add(tc.elapsed))
		if tc.wantRetry == 0 {
			if got.Status != screening.StatusComplete {
				t.Errorf("speed %v %s at +%v = %+v, want complete", tc.speed, tc.typ, tc.elapsed, got)
			}
		} else if got.Status != screening.StatusPending || got.RetryAfter != tc.wantRetry {
			t.Errorf("speed %v %s at +%v = %+v, want pending for %v", tc.speed, tc.typ, tc.elapsed, got, tc.wantRetry)
		}
	}
}

func TestSandboxNeverFinishes(t *testing.T) {
	for _, speed := range []float64{1, screening.DevSandboxSpeed} {
		sb := screening.NewSandbox(speed)
		for typ, delay := range realDelays {
			for _, elapsed := range []time.Duration{0, delay, 30 * 24 * time.Hour, 10 * 365 * 24 * time.Hour} {
				got := screen(t, sb, "111112005", typ, submitted.Add(elapsed))
				want := time.Duration(float64(delay) / speed)
				if got.Status != screening.StatusPending || got.RetryAfter != want {
					t.Errorf("speed %v %s at +%v = %+v, want pending for %v", speed, typ, elapsed, got, want)
				}
			}
		}
	}
}

// Records are handed to callers who store and edit them; one answer must not leak into the next.
func TestSandboxRecordsAreFresh(t *testing.T) {
	sb := screening.NewSandbox(1)
	now := submitted.Add(time.Hour)
	first := screen(t, sb, screening.SandboxSSNConsider, screening.TypeNationalCriminal, now)
	first.Records[0].Description = "tampered"
	if again := screen(t, sb, screening.SandboxSSNConsider, screening.TypeNationalCriminal, now); again.Records[0].Description == "tampered" {
		t.Error("editing one outcome's record changed the next outcome")
	}
}

func TestSandboxRefusesRequests(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	valid := screening.Request{ScreeningType: screening.TypeSSNTrace, SubmittedAt: submitted, Now: submitted}
	tests := []struct {
		name    string
		ctx     context.Context
		mutate  func(*screening.Request)
		wantErr error
	}{
		{"unknown type", context.Background(), func(r *screening.Request) { r.ScreeningType = "drug_screening" }, screening.ErrInvalidRequest},
		{"no SubmittedAt", context.Background(), func(r *screening.Request) { r.SubmittedAt = time.Time{} }, screening.ErrInvalidRequest},
		{"no Now", context.Background(), func(r *screening.Request) { r.Now = time.Time{} }, screening.ErrInvalidRequest},
		{"canceled context", canceled, func(*screening.Request) {}, context.Canceled},
	}
	for _, tc := range tests {
		req := valid
		tc.mutate(&req)
		if _, err := screening.NewSandbox(1).Screen(tc.ctx, req); !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
		}
	}
}

func TestParseSpeed(t *testing.T) {
	valid := []struct {
		in   string
		want float64
	}{
		{"", screening.DefaultSandboxSpeed},
		{"1", 1},
		{"3600", 3600},
		{" 86400 ", 86400},
		{"0.5", 0.5},
		{"1e3", 1000},
	}
	for _, tc := range valid {
		if got, err := screening.ParseSpeed(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseSpeed(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"0", "-1", "-0.5", "abc", "NaN", "Inf", "+Inf", "1h", "1,5", "1e999"} {
		if got, err := screening.ParseSpeed(in); err == nil {
			t.Errorf("ParseSpeed(%q) = %v, nil; want an error", in, got)
		}
	}
}

func TestNewSandboxRejectsBadSpeed(t *testing.T) {
	for _, speed := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewSandbox(%v) did not panic", speed)
				}
			}()
			screening.NewSandbox(speed)
		}()
	}
}
