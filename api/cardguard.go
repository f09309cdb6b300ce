package api

import (
	"bytes"
	"io"
	"net/http"

	"github.com/bgcheck/bgcheck"
)

// refuseCardNumbers answers 422 card_number_refused to a request whose path, query or body holds
// what looks like a full payment card number, before anything reads it further: bgcheck holds
// only payment processors' references, and the number is neither stored nor repeated in the
// answer or the log (the access log writes the path: a number there is refused with the rest).
// It guards the billing routes; handlers also check the decoded strings (cardInStrings), which
// JSON escapes could hide from the raw bytes.
func refuseCardNumbers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if containsCardNumber([]byte(r.URL.Path)) || containsCardNumber([]byte(r.URL.RawQuery)) {
			writeError(w, r, errCardNumber)
			return
		}
		if r.Body == nil || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, r, decodeError(err))
			return
		}
		if containsCardNumber(body) {
			writeError(w, r, errCardNumber)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

var errCardNumber = bgcheck.Errorf(bgcheck.CodeCardNumberRefused,
	"the request holds what looks like a card number; bgcheck never takes card numbers: create the payment method "+
		"at your payment processor and send its reference (processor_ref), brand and last4")

// cardInStrings reports whether any of the decoded strings holds a card number.
func cardInStrings(values ...string) bool {
	for _, v := range values {
		if containsCardNumber([]byte(v)) {
			return true
		}
	}
	return false
}

// containsCardNumber reports whether b holds a card number: a run of digits grouped by spaces,
// dashes, dots or slashes, standing on its own (not inside a word such as an id), whose first 13
// to 19 digits pass the Luhn check (so a number followed by its CVC or expiry is found too).
func containsCardNumber(b []byte) bool {
	for i := 0; i < len(b); {
		if !isDigit(b[i]) || (i > 0 && isWordByte(b[i-1])) {
			i++
			continue
		}
		var digits []byte
		j := i
		for j < len(b) {
			if isDigit(b[j]) {
				digits = append(digits, b[j])
				j++
				continue
			}
			k := j
			for k < len(b) && isSeparator(b[k]) {
				k++
			}
			if k == j || k == len(b) || !isDigit(b[k]) {
				break
			}
			j = k
		}
		alone := j == len(b) || !isWordByte(b[j])
		if alone && hasLuhnPrefix(digits) {
			return true
		}
		i = j
	}
	return false
}

func hasLuhnPrefix(digits []byte) bool {
	for n := 13; n <= 19 && n <= len(digits); n++ {
		if luhn(digits[:n]) {
			return true
		}
	}
	return false
}

func isSeparator(c byte) bool { return c == ' ' || c == '-' || c == '.' || c == '/' }

func isWordByte(c byte) bool {
	return isDigit(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// luhn reports whether the digits pass the Luhn checksum that every payment card number carries.
func luhn(digits []byte) bool {
	sum := 0
	for i := range digits {
		d := int(digits[len(digits)-1-i] - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
