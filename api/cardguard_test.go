package api

import "testing"

func TestContainsCardNumber(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"card":"4242424242424242"}`, true},
		{`{"card":"4242 4242 4242 4242"}`, true},
		{`{"card":"4242-4242-4242-4242"}`, true},
		{`{"note":"pay with 378282246310005 please"}`, true}, // 15-digit Amex
		{`{"n":4000056655665556}`, true},
		{`{"card":"4242 4242 4242 4242 123"}`, true}, // with its CVC
		{`{"card":"4242424242424242 12 30"}`, true},  // with its expiry
		{`{"card":"4242.4242.4242.4242"}`, true},
		{`{"card":"4242  4242  4242  4242"}`, true},
		{`/api/v1/billing/payment-methods/4242424242424242`, true},
		{`number=4242424242424242&x=1`, true},
		{`{"card":"1234567812345678"}`, false}, // no 13 to 19 first digits pass Luhn
		{`{"phone":"+14155550123"}`, false},    // too short
		{`{"processor_ref":"pm_1N3x4242424242424242Ab"}`, false},
		{`{"id":"pm_01a2088090412345678901234567aa"}`, false}, // inside an id
		{`{"last4":"4242","exp_month":12,"exp_year":2030}`, false},
	} {
		if got := containsCardNumber([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.body, got, tc.want)
		}
	}
}
