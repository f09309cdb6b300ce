package api

import (
	"bytes"
	"io"
	"net/http"

	"github.com/bgcheck/bgcheck"
)

// refuseCardNumbers answers 422 card_number_refused to a request whose body holds what looks like
// a full payment card number (13 to 19 digits, spaces or dashes between them allowed, passing the
// Luhn check), before anything reads it further: bgcheck holds only payment processors'
// references, and the number is neither stored nor repeated in the answer or the log.
func refuseCardNumbers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
			writeError(w, r, bgcheck.Errorf(bgcheck.CodeCardNumberRefused,
				"the request holds what looks like a card number; bgcheck never takes card numbers: create the payment method "+
					"at your payment processor and send its reference (processor_ref), brand and last4"))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// containsCardNumber reports whether b holds a run of 13 to 19 digits, possibly grouped by single
// spaces or dashes, standing on its own (not inside a word such as an id) and passing the Luhn
// check.
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
			} else if (b[j] == ' ' || b[j] == '-') && j+1 < len(b) && isDigit(b[j+1]) {
				j++
			} else {
				break
			}
		}
		alone := j == len(b) || !isWordByte(b[j])
		if alone && len(digits) >= 13 && len(digits) <= 19 && luhn(digits) {
			return true
		}
		i = j
	}
	return false
}

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
