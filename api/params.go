package api

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
)

// listParams reads ?limit= (1–100, default 20) and ?cursor= (an id of the listed kind, as
// returned in next_cursor).
func listParams(r *http.Request, idPrefix string) (bgcheck.ListParams, error) {
	q := r.URL.Query()
	p := bgcheck.ListParams{Limit: postgres.DefaultPageLimit, Cursor: q.Get("cursor")}
	var fields []bgcheck.FieldError
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > postgres.MaxPageLimit {
			fields = append(fields, bgcheck.FieldError{Field: "limit", Message: "must be a whole number from 1 to 100"})
		}
		p.Limit = n
	}
	if p.Cursor != "" && !bgcheck.ValidID(idPrefix, p.Cursor) {
		fields = append(fields, bgcheck.FieldError{Field: "cursor", Message: "must be a next_cursor value from a previous page"})
	}
	if fields != nil {
		return p, bgcheck.ValidationError(fields...)
	}
	return p, nil
}

// pathID returns the URL parameter name, or not-found when it cannot be an id of the kind: a
// malformed id names nothing, so it is answered like an absent one.
func pathID(r *http.Request, name, prefix string) (string, error) {
	id := chi.URLParam(r, name)
	if !bgcheck.ValidID(prefix, id) {
		return "", bgcheck.ErrNotFound
	}
	return id, nil
}
