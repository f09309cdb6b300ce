package api

import (
	"net/http"
	"regexp"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
)

func (s *Server) usageRoutes(r chi.Router) {
	r.Use(requireScope(bgcheck.ScopeUsageRead))
	r.Get("/", s.handleUsage)
	r.Get("/quota", s.handleQuota)
}

func (s *Server) billingRoutes(r chi.Router) {
	read, write := requireScope(bgcheck.ScopeBillingRead), requireScope(bgcheck.ScopeBillingWrite)
	r.Use(refuseCardNumbers)
	r.With(read).Get("/invoices", s.handleInvoiceList)
	r.With(read).Get("/invoices/{invoiceID}", s.handleInvoiceGet)
	r.With(read).Get("/payment-methods", s.handlePaymentMethodList)
	r.With(write).Post("/payment-methods", s.handlePaymentMethodAdd)
	r.With(write).Post("/payment-methods/{paymentMethodID}/default", s.handlePaymentMethodDefault)
	r.With(write).Delete("/payment-methods/{paymentMethodID}", s.handlePaymentMethodRemove)
}

// billingTenant is whose payment methods a request manages: an API key's account in its mode (test
// mode has its own, as in Stripe), or, for the dashboard, the account's live ones.
func billingTenant(r *http.Request) (bgcheck.Tenant, error) {
	scope, err := scopeOf(r)
	if err != nil {
		return bgcheck.Tenant{}, err
	}
	if scope.admin {
		return bgcheck.Tenant{AccountID: scope.accountID, Mode: bgcheck.ModeLive}, nil
	}
	return bgcheck.Tenant{AccountID: scope.accountID, Mode: scope.mode}, nil
}

// usageRange reads ?from= and ?to= (RFC 3339 times or YYYY-MM-DD dates, UTC); without them, the
// current period.
func usageRange(r *http.Request) (from, to time.Time, err error) {
	from, to = bgcheck.PeriodOf(time.Now())
	var v validator
	parse := func(field string, def time.Time) time.Time {
		raw := r.URL.Query().Get(field)
		if raw == "" {
			return def
		}
		if t, err := time.Parse(time.RFC3339, raw); err == nil {
			return t
		}
		if t, err := time.Parse(time.DateOnly, raw); err == nil {
			return t
		}
		v.add(field, "must be a time (RFC 3339) or a date (YYYY-MM-DD)")
		return def
	}
	from, to = parse("from", from), parse("to", to)
	if !to.After(from) {
		v.add("to", "must be after from")
	}
	return from, to, v.err()
}

// handleUsage lists the key's mode's usage records of a period (the current one by default),
// newest first, with the period's totals by package.
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	p, err := listParams(r, bgcheck.PrefixUsageRecord)
	if err != nil {
		writeError(w, r, err)
		return
	}
	from, to, err := usageRange(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	u, err := s.db.ListUsage(r.Context(), tenantOf(r), from, to, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

// handleQuota shows the account's monthly quota of checks in the key's mode and what is left.
func (s *Server) handleQuota(w http.ResponseWriter, r *http.Request) {
	q, err := s.db.FindQuota(r.Context(), tenantOf(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, q)
}

func (s *Server) handleInvoiceList(w http.ResponseWriter, r *http.Request) {
	scope, err := scopeOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p, err := listParams(r, bgcheck.PrefixInvoice)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if scope.mode == bgcheck.ModeTest { // invoices bill live usage: test mode has none
		writeJSON(w, http.StatusOK, bgcheck.Page[*bgcheck.Invoice]{Data: []*bgcheck.Invoice{}})
		return
	}
	page, err := s.db.ListInvoices(r.Context(), scope.accountID, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) handleInvoiceGet(w http.ResponseWriter, r *http.Request) {
	scope, err := scopeOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "invoiceID", bgcheck.PrefixInvoice)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if scope.mode == bgcheck.ModeTest {
		writeError(w, r, bgcheck.ErrNotFound)
		return
	}
	inv, err := s.db.FindInvoice(r.Context(), scope.accountID, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inv)
}

func (s *Server) handlePaymentMethodList(w http.ResponseWriter, r *http.Request) {
	t, err := billingTenant(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pms, err := s.db.ListPaymentMethods(r.Context(), t)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": pms, "has_more": false, "next_cursor": nil})
}

type paymentMethodRequest struct {
	Processor    string `json:"processor"`
	ProcessorRef string `json:"processor_ref"`
	Brand        string `json:"brand"`
	Last4        string `json:"last4"`
	ExpMonth     int    `json:"exp_month"`
	ExpYear      int    `json:"exp_year"`
}

var (
	processorPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{1,31}$`)
	referencePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	brandPattern     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	last4Pattern     = regexp.MustCompile(`^[0-9]{4}$`)
)

// handlePaymentMethodAdd stores a reference to a payment method created at a payment processor.
func (s *Server) handlePaymentMethodAdd(w http.ResponseWriter, r *http.Request) {
	t, err := billingTenant(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req paymentMethodRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if cardInStrings(req.Processor, req.ProcessorRef, req.Brand, req.Last4) { // JSON escapes hide digits from the raw scan
		writeError(w, r, errCardNumber)
		return
	}
	var v validator
	if !processorPattern.MatchString(req.Processor) {
		v.add("processor", "is required: the payment processor's name, such as stripe")
	}
	if !referencePattern.MatchString(req.ProcessorRef) {
		v.add("processor_ref", "is required: the processor's id of the payment method (letters, digits, _ and -), at most 255 characters")
	}
	if !brandPattern.MatchString(req.Brand) {
		v.add("brand", "is required: the card's brand, such as visa (letters, digits, _ and -), at most 32 characters")
	}
	if !last4Pattern.MatchString(req.Last4) {
		v.add("last4", "must be the card number's last four digits")
	}
	if req.ExpMonth < 1 || req.ExpMonth > 12 {
		v.add("exp_month", "must be a month, 1 to 12")
	}
	now := time.Now().UTC()
	if req.ExpYear < now.Year() || req.ExpYear > now.Year()+30 || (req.ExpYear == now.Year() && req.ExpMonth < int(now.Month())) {
		v.add("exp_year", "must be a year the card has not expired by")
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	pm, err := s.db.AddPaymentMethod(r.Context(), t, bgcheck.PaymentMethod{
		Processor: req.Processor, ProcessorRef: req.ProcessorRef, Brand: req.Brand,
		Last4: req.Last4, ExpMonth: req.ExpMonth, ExpYear: req.ExpYear,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, pm)
}

func (s *Server) handlePaymentMethodDefault(w http.ResponseWriter, r *http.Request) {
	t, err := billingTenant(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "paymentMethodID", bgcheck.PrefixPaymentMethod)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pm, err := s.db.SetDefaultPaymentMethod(r.Context(), t, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pm)
}

func (s *Server) handlePaymentMethodRemove(w http.ResponseWriter, r *http.Request) {
	t, err := billingTenant(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "paymentMethodID", bgcheck.PrefixPaymentMethod)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.db.RemovePaymentMethod(r.Context(), t, id); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// adminBillingJSON is the dashboard's Billing page: the live quota and the current period's live
// usage, by package and per day.
type adminBillingJSON struct {
	Quota      *bgcheck.Quota       `json:"quota"`
	Totals     []bgcheck.UsageTotal `json:"totals"`
	TotalCents int64                `json:"total_cents"`
	Daily      []dailyUsageJSON     `json:"daily"`
}

type dailyUsageJSON struct {
	Date   string `json:"date"`
	Checks int    `json:"checks"`
}

// handleAdminBilling answers the Billing page: live mode, where usage is billed.
func (s *Server) handleAdminBilling(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	live := bgcheck.Tenant{AccountID: acct, Mode: bgcheck.ModeLive}
	q, err := s.db.FindQuota(r.Context(), live)
	if err != nil {
		writeError(w, r, err)
		return
	}
	u, err := s.db.ListUsage(r.Context(), live, q.PeriodStart, q.PeriodEnd, bgcheck.ListParams{Limit: 1})
	if err != nil {
		writeError(w, r, err)
		return
	}
	days, err := s.db.DailyUsage(r.Context(), live, q.PeriodStart, q.PeriodEnd)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := adminBillingJSON{Quota: q, Totals: u.Totals, TotalCents: u.TotalCents}
	for d := q.PeriodStart; d.Before(q.PeriodEnd); d = d.AddDate(0, 0, 1) {
		key := d.Format(time.DateOnly)
		out.Daily = append(out.Daily, dailyUsageJSON{Date: key, Checks: days[key]})
	}
	writeJSON(w, http.StatusOK, out)
}
