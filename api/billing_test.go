package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
)

type quotaJSON struct {
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	Limit       int       `json:"limit"`
	Used        int       `json:"used"`
	Remaining   int       `json:"remaining"`
}

type usageJSON struct {
	Data []struct {
		ID             string `json:"id"`
		Check          string `json:"check"`
		Package        string `json:"package"`
		UnitPriceCents int    `json:"unit_price_cents"`
	} `json:"data"`
	Totals []struct {
		Package     string `json:"package"`
		Quantity    int    `json:"quantity"`
		AmountCents int64  `json:"amount_cents"`
	} `json:"totals"`
}

// Consent records one usage record, once, however often the check is authorized; a check
// canceled before consent costs nothing and gives its unit of quota back.
func TestUsageIsRecordedOncePerConsentedCheck(t *testing.T) {
	e, _ := newPortalEnv(t)
	a := e.newAccount()
	jane := e.candidateWithEmail(a.TestKey, "jane@example.com")
	c := decode[checkJSON](t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": jane, "package": "standard"}), 201)
	canceled := decode[checkJSON](t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": jane, "package": "basic"}), 201)
	token := e.consumerToken(c.ID, "an-invitation-token-for-jane-usage-0001")
	consent := map[string]any{"ssn": "111-11-2003", "address": "1 Main St", "consent": true}
	decode[map[string]any](t, e.bearer("POST", "/api/v1/consumer/checks/"+c.ID+"/authorize", token, consent), 200)
	// Suspended for the candidate's correction and authorized again: still one record.
	if err := e.db.SuspendCheck(context.Background(), c.ID, "ssn_mismatch"); err != nil {
		t.Fatal(err)
	}
	decode[map[string]any](t, e.bearer("POST", "/api/v1/consumer/checks/"+c.ID+"/authorize", token, consent), 200)
	decode[checkJSON](t, e.do("POST", "/api/v1/checks/"+canceled.ID+"/cancel", a.TestKey, nil), 200)

	u := decode[usageJSON](t, e.do("GET", "/api/v1/usage", a.TestKey, nil), 200)
	if len(u.Data) != 1 || u.Data[0].Check != c.ID || u.Data[0].Package != "standard" || u.Data[0].UnitPriceCents != 0 ||
		len(u.Totals) != 1 || u.Totals[0].Quantity != 1 || u.Totals[0].AmountCents != 0 {
		t.Fatalf("usage %+v", u)
	}
	if q := decode[quotaJSON](t, e.do("GET", "/api/v1/usage/quota", a.TestKey, nil), 200); q.Used != 1 || q.Limit != 1000 || q.Remaining != 999 ||
		q.PeriodStart.Day() != 1 || !q.PeriodEnd.Equal(q.PeriodStart.AddDate(0, 1, 0)) {
		t.Fatalf("quota %+v", q)
	}
	// The live mode has its own records: none.
	if u := decode[usageJSON](t, e.do("GET", "/api/v1/usage", a.LiveKey, nil), 200); len(u.Data) != 0 {
		t.Fatalf("live usage %+v", u)
	}
	wantFieldError(t, e.do("GET", "/api/v1/usage?from=yesterday", a.TestKey, nil), "from")
	wantFieldError(t, e.do("GET", "/api/v1/usage?from=2026-11-02&to=2026-11-01", a.TestKey, nil), "to")
	if u := decode[usageJSON](t, e.do("GET", "/api/v1/usage?from=2020-01-01&to=2020-02-01", a.TestKey, nil), 200); len(u.Data) != 0 {
		t.Fatalf("usage of 2020 %+v", u)
	}
	keyWithout, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeChecksRead}})
	wantProblem(t, e.do("GET", "/api/v1/usage", keyWithout, nil), 403, bgcheck.CodeInsufficientScope)
	wantProblem(t, e.do("GET", "/api/v1/billing/invoices", keyWithout, nil), 403, bgcheck.CodeInsufficientScope)
}

// Of 50 concurrent creates with 10 units of quota left, exactly 10 succeed; the others are 402
// quota_exceeded, naming the limit and the reset, and leave nothing behind.
func TestQuotaHoldsUnderConcurrentCreates(t *testing.T) {
	e, _ := newPortalEnv(t)
	a := e.newAccount()
	jane := e.candidateWithEmail(a.TestKey, "jane@example.com")
	decode[checkJSON](t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": jane, "package": "basic"}), 201)
	if err := e.db.SetQuota(context.Background(), a.ID, 11); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"candidate_id": jane, "package": "basic"})
	statuses := make([]int, 50)
	codes := make([]string, 50)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/checks", bytes.NewReader(body))
			req.Header.Set("X-API-Key", a.TestKey)
			req.Header.Set("Content-Type", "application/json")
			res, err := e.srv.Client().Do(req)
			if err != nil {
				return
			}
			defer res.Body.Close()
			var p struct{ Code, Detail string }
			_ = json.NewDecoder(res.Body).Decode(&p)
			statuses[i], codes[i] = res.StatusCode, p.Code+" "+p.Detail
		})
	}
	wg.Wait()
	created, refused := 0, 0
	for i, st := range statuses {
		switch {
		case st == http.StatusCreated:
			created++
		case st == http.StatusPaymentRequired && strings.HasPrefix(codes[i], "quota_exceeded the monthly quota of 11 checks"):
			refused++
		default:
			t.Errorf("create %d: %d %s", i, st, codes[i])
		}
	}
	if created != 10 || refused != 40 {
		t.Fatalf("%d created, %d refused; want exactly 10 and 40", created, refused)
	}
	if l := decode[pageJSON[checkJSON]](t, e.do("GET", "/api/v1/checks?limit=100", a.TestKey, nil), 200); len(l.Data) != 11 {
		t.Fatalf("%d checks exist, want 11", len(l.Data))
	}
	if q := decode[quotaJSON](t, e.do("GET", "/api/v1/usage/quota", a.TestKey, nil), 200); q.Used != 11 || q.Remaining != 0 {
		t.Fatalf("quota %+v", q)
	}
	p := wantProblem(t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": jane, "package": "basic"}), 402, bgcheck.CodeQuotaExceeded)
	_, next := bgcheck.PeriodOf(time.Now())
	if !strings.Contains(p.Detail, next.Format(time.RFC3339)) {
		t.Fatalf("the refusal does not say when the quota resets: %q", p.Detail)
	}
}

// A payment method is a processor's reference; a request carrying what looks like a card number
// is refused, and the number is stored nowhere and logged nowhere.
func TestPaymentMethodsNeverTakeACardNumber(t *testing.T) {
	e, _ := newPortalEnv(t)
	a, b := e.newAccount(), e.newAccount()
	pm := map[string]any{"processor": "stripe", "processor_ref": "pm_1Q2w3E4r5T6y7U8i", "brand": "visa", "last4": "4242", "exp_month": 12, "exp_year": time.Now().Year() + 2}
	first := decode[map[string]any](t, e.do("POST", "/api/v1/billing/payment-methods", a.TestKey, pm), 201)
	if first["default"] != true || first["last4"] != "4242" {
		t.Fatalf("first payment method %v", first)
	}
	pm["processor_ref"], pm["brand"], pm["last4"] = "pm_9Z8y7X6w5V4u3T2s", "mastercard", "4444"
	second := decode[map[string]any](t, e.do("POST", "/api/v1/billing/payment-methods", a.TestKey, pm), 201)
	if second["default"] != false {
		t.Fatalf("second payment method %v", second)
	}
	id := second["id"].(string)
	wantProblem(t, e.do("POST", "/api/v1/billing/payment-methods/"+id+"/default", b.TestKey, nil), 404, bgcheck.CodeNotFound)
	if got := decode[map[string]any](t, e.do("POST", "/api/v1/billing/payment-methods/"+id+"/default", a.TestKey, nil), 200); got["default"] != true {
		t.Fatalf("after set-default %v", got)
	}
	l := decode[pageJSON[map[string]any]](t, e.do("GET", "/api/v1/billing/payment-methods", a.TestKey, nil), 200)
	if len(l.Data) != 2 || l.Data[0]["id"] != id || l.Data[1]["default"] != false {
		t.Fatalf("payment methods %v", l.Data)
	}
	if r := e.do("DELETE", "/api/v1/billing/payment-methods/"+id, a.TestKey, nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if l := decode[pageJSON[map[string]any]](t, e.do("GET", "/api/v1/billing/payment-methods", a.TestKey, nil), 200); len(l.Data) != 1 || l.Data[0]["default"] != true {
		t.Fatalf("after removing the default, the other is it: %v", l.Data)
	}

	// Test mode has its own payment methods: the live ones are apart.
	if l := decode[pageJSON[map[string]any]](t, e.do("GET", "/api/v1/billing/payment-methods", a.LiveKey, nil), 200); len(l.Data) != 0 {
		t.Fatalf("the live key sees the test mode's payment methods: %v", l.Data)
	}

	const card = "4000 0566 5566 5556"
	for _, body := range []any{
		map[string]any{"processor": "stripe", "processor_ref": card, "brand": "visa", "last4": "5556", "exp_month": 1, "exp_year": 2031},
		map[string]any{"processor": "stripe", "processor_ref": "pm_x", "brand": "visa", "last4": "5556", "exp_month": 1, "exp_year": 2031, "number": "4000056655665556"},
		map[string]any{"processor": "stripe", "processor_ref": "4000056655665556 123", "brand": "visa", "last4": "5556", "exp_month": 1, "exp_year": 2031},
		// A JSON escape hides the first digit from the raw bytes; the decoded value still has it.
		`{"processor":"stripe","processor_ref":"\u00340000566556655 56","brand":"visa","last4":"5556","exp_month":1,"exp_year":2031}`,
	} {
		r := e.do("POST", "/api/v1/billing/payment-methods", a.TestKey, body)
		wantProblem(t, r, 422, bgcheck.CodeCardNumberRefused)
		if strings.Contains(string(r.Body), "056655665") || strings.Contains(string(r.Body), "5566 5556") {
			t.Fatalf("the answer repeats the number: %s", r.Body)
		}
	}
	// In the query or the path, which the access log writes, as much as in the body.
	wantProblem(t, e.do("GET", "/api/v1/billing/payment-methods?card=4000056655665556", a.TestKey, nil), 422, bgcheck.CodeCardNumberRefused)
	wantProblem(t, e.do("DELETE", "/api/v1/billing/payment-methods/4000056655665556", a.TestKey, nil), 422, bgcheck.CodeCardNumberRefused)
	var stored int
	if err := e.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM payment_methods WHERE processor_ref LIKE '%056655665%' OR account_id = $1 AND last4 = '5556'`,
		a.ID).Scan(&stored); err != nil || stored != 0 {
		t.Fatalf("%d payment methods hold the card, %v", stored, err)
	}
	// (Not just "5566": random ids in the log may hold that.)
	if logs := e.logs.String(); strings.Contains(logs, "056655665") || strings.Contains(logs, "5566 5556") {
		t.Fatalf("the card number is in the log:\n%s", logs)
	}
	keyRead, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeBillingRead}})
	decode[pageJSON[map[string]any]](t, e.do("GET", "/api/v1/billing/payment-methods", keyRead, nil), 200)
	wantProblem(t, e.do("POST", "/api/v1/billing/payment-methods", keyRead, pm), 403, bgcheck.CodeInsufficientScope)
}

// An invoice totals a seeded month's live usage by package, as computed by hand, once.
func TestInvoiceOfASeededMonth(t *testing.T) {
	e, _ := newPortalEnv(t)
	a := e.newAccount()
	e.user(a.ID, "admin@invoice.test", bgcheck.RoleAdmin, "correct horse battery")
	admin := e.login("admin@invoice.test", "correct horse battery").AccessToken
	october := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	seed := []struct {
		pkg   string
		cents int
		at    time.Time
		mode  string
	}{
		{"basic", 2999, october.Add(time.Hour), "live"},
		{"basic", 2999, october.AddDate(0, 0, 14), "live"},
		{"basic", 2999, october.AddDate(0, 1, 0).Add(-time.Second), "live"},
		{"driver", 7999, october.AddDate(0, 0, 3), "live"},
		{"basic", 0, october.AddDate(0, 0, 3), "test"},     // test mode: never invoiced
		{"basic", 2999, october.AddDate(0, 1, 0), "live"},  // November: not October's
		{"basic", 2999, october.Add(-time.Second), "live"}, // September
		{"employment", 8999, october.AddDate(0, 0, 20), "live"},
	}
	for i, s := range seed {
		if _, err := e.db.Pool().Exec(context.Background(), `INSERT INTO usage_records (id, account_id, mode, check_id, package, unit_price_cents, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, bgcheck.NewID(bgcheck.PrefixUsageRecord), a.ID, s.mode, bgcheck.NewID(bgcheck.PrefixCheck), s.pkg, s.cents, s.at); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
	inv, err := e.db.IssueInvoice(context.Background(), a.ID, october.AddDate(0, 0, 10))
	if err != nil {
		t.Fatal(err)
	}
	want := []bgcheck.InvoiceLine{
		{Package: "basic", Quantity: 3, UnitPriceCents: 2999, AmountCents: 8997},
		{Package: "driver", Quantity: 1, UnitPriceCents: 7999, AmountCents: 7999},
		{Package: "employment", Quantity: 1, UnitPriceCents: 8999, AmountCents: 8999},
	}
	if inv.TotalCents != 8997+7999+8999 || len(inv.Lines) != 3 || inv.Number != "2026-10-0001" || inv.Currency != "usd" ||
		inv.Status != bgcheck.InvoiceOpen || !inv.PeriodStart.Equal(october) {
		t.Fatalf("invoice %+v", inv)
	}
	for i := range want {
		if inv.Lines[i] != want[i] {
			t.Fatalf("line %d: %+v, want %+v", i, inv.Lines[i], want[i])
		}
	}
	again, err := e.db.IssueInvoice(context.Background(), a.ID, october)
	if err != nil || again.ID != inv.ID {
		t.Fatalf("issuing the period again: %v, %v", again, err)
	}
	if none, err := e.db.IssueInvoice(context.Background(), a.ID, october.AddDate(0, -3, 0)); none != nil || err != nil {
		t.Fatalf("a month without usage: %v, %v", none, err)
	}
	l := decode[pageJSON[map[string]any]](t, e.do("GET", "/api/v1/billing/invoices", a.LiveKey, nil), 200)
	if len(l.Data) != 1 || l.Data[0]["id"] != inv.ID || l.Data[0]["total_cents"] != float64(25995) || l.Data[0]["period"] != "2026-10" {
		t.Fatalf("invoices %v", l.Data)
	}
	// Invoices bill live usage: test mode has none.
	if l := decode[pageJSON[map[string]any]](t, e.do("GET", "/api/v1/billing/invoices", a.TestKey, nil), 200); len(l.Data) != 0 {
		t.Fatalf("a test key lists invoices %v", l.Data)
	}
	wantProblem(t, e.do("GET", "/api/v1/billing/invoices/"+inv.ID, a.TestKey, nil), 404, bgcheck.CodeNotFound)
	decode[map[string]any](t, e.bearer("GET", "/api/v1/admin/billing/invoices/"+inv.ID, admin, nil), 200)
	other := e.newAccount()
	wantProblem(t, e.do("GET", "/api/v1/billing/invoices/"+inv.ID, other.LiveKey, nil), 404, bgcheck.CodeNotFound)
	if got := decode[map[string]any](t, e.bearer("GET", "/api/v1/admin/billing", admin, nil), 200); got["quota"] == nil || got["daily"] == nil {
		t.Fatalf("the billing page %v", got)
	}
}
