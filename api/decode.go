package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/bgcheck/bgcheck"
)

// maxBodyBytes bounds every request body (API.md §1: larger is 413 body_too_large).
const maxBodyBytes = 1 << 20

// decodeJSON reads the request body into dst, which must be a pointer to a struct. It refuses
// unknown fields and trailing data, and translates every failure into the codes of API.md §1:
// malformed_json, body_too_large, or validation_failed for a value of the wrong JSON type.
func decodeJSON(r *http.Request, dst any) error {
	if r.ContentLength > maxBodyBytes {
		return bgcheck.Errorf(bgcheck.CodeBodyTooLarge, "the request body is larger than %d bytes", maxBodyBytes)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	// Only an object is a request: null, arrays and scalars are malformed, not "no fields".
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] != '{' {
		return bgcheck.Errorf(bgcheck.CodeMalformedJSON, "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return bgcheck.Errorf(bgcheck.CodeMalformedJSON, "the request body must hold a single JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var (
		tooLarge  *http.MaxBytesError
		syntax    *json.SyntaxError
		typeError *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return bgcheck.Errorf(bgcheck.CodeBodyTooLarge, "the request body is larger than %d bytes", maxBodyBytes)
	case errors.Is(err, io.EOF):
		return bgcheck.Errorf(bgcheck.CodeMalformedJSON, "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return bgcheck.Errorf(bgcheck.CodeMalformedJSON, "the request body ends in the middle of a JSON value")
	case errors.As(err, &syntax):
		return bgcheck.Errorf(bgcheck.CodeMalformedJSON, "the request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typeError):
		if typeError.Field == "" {
			return bgcheck.Errorf(bgcheck.CodeMalformedJSON, "the request body must be a JSON object")
		}
		return bgcheck.ValidationError(bgcheck.FieldError{Field: typeError.Field, Message: "must be " + jsonKind(typeError.Type.String())})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return bgcheck.Errorf(bgcheck.CodeMalformedJSON, "the request body has an unknown field %s", field)
	}
	return bgcheck.Errorf(bgcheck.CodeMalformedJSON, "the request body could not be read as JSON")
}

// jsonKind names a Go type the way a JSON client thinks of it.
func jsonKind(goType string) string {
	switch {
	case strings.Contains(goType, "[]"):
		return "an array"
	case strings.Contains(goType, "string"):
		return "a string"
	case strings.Contains(goType, "bool"):
		return "true or false"
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "a number"
	}
	return fmt.Sprintf("of type %s", goType)
}
