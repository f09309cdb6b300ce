package api

import "strconv"

func itoa(n int) string { return strconv.Itoa(n) }

// quote renders a caller's value inside an error message, escaped and shortened.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}
