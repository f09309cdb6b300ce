// Package screening holds what a background check is made of — screening types, their statuses
// and results, the fixed package catalogue — and the Provider interface a check workflow drives
// to run each screening, with Sandbox as the test-mode provider (API.md §10).
//
// It depends on nothing but the standard library, so the API, the workflows and the activities
// can all share these types without reaching around one another.
package screening

import "slices"

// Type names one kind of search. The strings are part of the public API (package listings, check
// resources, webhook payloads), so they never change once published.
type Type string

// The screening types the catalogue uses.
const (
	TypeSSNTrace               Type = "ssn_trace"
	TypeNationalCriminal       Type = "national_criminal"
	TypeCountyCriminal         Type = "county_criminal"
	TypeSexOffender            Type = "sex_offender"
	TypeMotorVehicle           Type = "motor_vehicle"
	TypeEmploymentVerification Type = "employment_verification"
	TypeEducationVerification  Type = "education_verification"
)

// Valid reports whether t is one of the known types, so callers can reject an unknown type
// before a workflow is started with it.
func (t Type) Valid() bool {
	switch t {
	case TypeSSNTrace, TypeNationalCriminal, TypeCountyCriminal, TypeSexOffender,
		TypeMotorVehicle, TypeEmploymentVerification, TypeEducationVerification:
		return true
	}
	return false
}

// Status is where one screening stands. Pending is the only state a provider is asked about
// again; suspended waits for the candidate to correct their data, not for time to pass.
type Status string

// The screening statuses. A provider answers pending, complete, suspended or failed; canceled is
// set by the check workflow (customer cancellation, a screening deadline), never by a provider.
const (
	StatusPending   Status = "pending"
	StatusComplete  Status = "complete"
	StatusSuspended Status = "suspended"
	StatusCanceled  Status = "canceled"
	StatusFailed    Status = "failed"
)

// Result is what a complete screening found. It is empty until the screening is complete, so a
// check's disposition can only be computed from screenings that actually finished.
type Result string

// The two results, as in Checkr: consider means there is something for the employer to review,
// not that the candidate failed.
const (
	ResultClear    Result = "clear"
	ResultConsider Result = "consider"
)

// Record is one item a screening found — a court case, a registry entry — kept small because it
// is shown to the employer, copied into the consumer report, and disputed item by item.
type Record struct {
	// Description is the human-readable charge or entry, e.g. "Petty theft".
	Description string `json:"description"`
	// Classification is the severity as the source states it, e.g. "misdemeanor".
	Classification string `json:"classification"`
	// Disposition is how the case ended, e.g. "convicted"; empty for registry entries.
	Disposition string `json:"disposition,omitempty"`
	// Jurisdiction is the court or registry that holds the record, e.g. "Alameda County, CA".
	Jurisdiction string `json:"jurisdiction"`
	// Date is the offense or filing date as YYYY-MM-DD: a civil date, so it carries no time zone.
	Date string `json:"date"`
}

// Package is a named, fixed set of screenings a customer orders a check by.
type Package struct {
	Slug       string `json:"slug"`
	Name       string `json:"name"`
	Screenings []Type `json:"screenings"`
	// PriceCents is what a live check of the package costs, in US cents, billed once its
	// candidate consents; test-mode checks cost nothing.
	PriceCents int `json:"price_cents"`
}

// The catalogue is built from the smaller packages so that "standard = basic + …" stays true by
// construction rather than by careful copying.
var (
	basicScreenings    = []Type{TypeSSNTrace, TypeNationalCriminal}
	standardScreenings = concat(basicScreenings, TypeCountyCriminal, TypeSexOffender)
	catalogue          = []Package{
		{Slug: "basic", Name: "Basic", Screenings: basicScreenings, PriceCents: 2999},
		{Slug: "standard", Name: "Standard", Screenings: standardScreenings, PriceCents: 5499},
		{Slug: "driver", Name: "Driver", Screenings: concat(standardScreenings, TypeMotorVehicle), PriceCents: 7999},
		{Slug: "employment", Name: "Employment", Screenings: concat(standardScreenings,
			TypeEmploymentVerification, TypeEducationVerification), PriceCents: 8999},
	}
)

func concat(base []Type, more ...Type) []Type {
	return append(slices.Clip(base), more...)
}

// Catalogue returns the packages GET /api/v1/packages lists, smallest first. The catalogue is
// fixed in code rather than stored, so every account and both modes see the same packages. The
// result is a copy: a caller that changes it cannot change what the next caller sees.
func Catalogue() []Package {
	out := make([]Package, len(catalogue))
	for i, p := range catalogue {
		out[i] = clonePackage(p)
	}
	return out
}

// FindPackage returns the package with the given slug, and false when there is none, so the API
// can refuse a check for an unknown package before starting anything.
func FindPackage(slug string) (Package, bool) {
	for _, p := range catalogue {
		if p.Slug == slug {
			return clonePackage(p), true
		}
	}
	return Package{}, false
}

func clonePackage(p Package) Package {
	p.Screenings = slices.Clone(p.Screenings)
	return p
}
