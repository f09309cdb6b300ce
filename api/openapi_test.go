package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/ratelimit"
	"github.com/bgcheck/bgcheck/ratelimit/limiter"
)

// The tests in this file hold api/openapi.json to the router: every route is documented and every
// documented operation is served, with the authentication, scope and role the document claims.

// openAPIMethods are the operation keys of an OpenAPI path item.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// openAPIOperation is the part of an operation object the tests read.
type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Security    *[]map[string][]string     `json:"security"`
	Scope       string                     `json:"x-required-scope"`
	Role        bgcheck.Role               `json:"x-required-role"`
	RateClass   string                     `json:"x-rate-limit-class"`
	Parameters  []json.RawMessage          `json:"parameters"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

// openAPISpec is a parsed document: its operations keyed "METHOD /path", and the whole tree for
// resolving references.
type openAPISpec struct {
	version    string
	security   []map[string][]string
	operations map[string]openAPIOperation
	pathParams map[string][]json.RawMessage // path-item-level parameters, by path
	tree       any
}

func loadOpenAPISpec(t *testing.T) *openAPISpec {
	t.Helper()
	var doc struct {
		OpenAPI  string                                `json:"openapi"`
		Security []map[string][]string                 `json:"security"`
		Paths    map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	spec := &openAPISpec{
		version:    doc.OpenAPI,
		security:   doc.Security,
		operations: make(map[string]openAPIOperation),
		pathParams: make(map[string][]json.RawMessage),
	}
	if err := json.Unmarshal(openAPIDocument, &spec.tree); err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths {
		if raw, ok := item["parameters"]; ok {
			var params []json.RawMessage
			if err := json.Unmarshal(raw, &params); err != nil {
				t.Fatalf("%s: parameters: %v", path, err)
			}
			spec.pathParams[path] = params
		}
		for _, method := range openAPIMethods {
			raw, ok := item[method]
			if !ok {
				continue
			}
			var op openAPIOperation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", strings.ToUpper(method), path, err)
			}
			spec.operations[strings.ToUpper(method)+" "+path] = op
		}
	}
	return spec
}

// needsAPIKey reports whether op requires the ApiKey scheme: its own security, or the document's
// when it has none.
func (s *openAPISpec) needsAPIKey(op openAPIOperation) bool { return s.needs(op, "ApiKey") }

// needsBearer reports whether op requires the BearerAuth scheme (a portal user's access token).
func (s *openAPISpec) needsBearer(op openAPIOperation) bool { return s.needs(op, "BearerAuth") }

// securityOf is op's own security, or the document's when it has none.
func (s *openAPISpec) securityOf(op openAPIOperation) []map[string][]string {
	if op.Security != nil {
		return *op.Security
	}
	return s.security
}

func (s *openAPISpec) needs(op openAPIOperation, scheme string) bool {
	return slices.ContainsFunc(s.securityOf(op), func(req map[string][]string) bool {
		_, ok := req[scheme]
		return ok
	})
}

// resolve follows a local reference ("#/components/…") through the document.
func (s *openAPISpec) resolve(ref string) (any, bool) {
	rest, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	node := s.tree
	if rest == "" {
		return node, true
	}
	if !strings.HasPrefix(rest, "/") {
		return nil, false
	}
	for _, token := range strings.Split(rest[1:], "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		obj, ok := node.(map[string]any)
		if !ok {
			return nil, false
		}
		if node, ok = obj[token]; !ok {
			return nil, false
		}
	}
	return node, true
}

// object decodes raw and, when it is a reference, returns what it refers to; nil (after reporting
// why) when that is not an object.
func (s *openAPISpec) object(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Errorf("%s is not an object: %v", raw, err)
		return nil
	}
	for range 10 {
		ref, ok := v["$ref"].(string)
		if !ok {
			return v
		}
		target, _ := s.resolve(ref)
		if v, ok = target.(map[string]any); !ok {
			t.Errorf("$ref %s does not name an object", ref)
			return nil
		}
	}
	t.Errorf("%s: $ref chain too long", raw)
	return nil
}

// refs returns every "$ref" value in the tree.
func refs(node any) []string {
	var out []string
	switch n := node.(type) {
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok {
			out = append(out, ref)
		}
		for _, v := range n {
			out = append(out, refs(v)...)
		}
	case []any:
		for _, v := range n {
			out = append(out, refs(v)...)
		}
	}
	return out
}

// routerRoutes walks a router and returns "METHOD /path" for each route, without the trailing
// slash chi gives the root of a sub-router ("/api/v1/candidates/" is served as
// "/api/v1/candidates").
func routerRoutes(t *testing.T, h http.Handler) []string {
	t.Helper()
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("Handler() is a %T, not a chi.Routes", h)
	}
	var out []string
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if len(route) > 1 {
			route = strings.TrimSuffix(route, "/")
		}
		// The admin dashboard's static page (dashboard.go) is for browsers, not part of the API.
		if route == "/dashboard" || strings.HasPrefix(route, "/dashboard/") {
			return nil
		}
		out = append(out, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// routeDiff returns the routes the document lacks and the documented operations no route serves.
func routeDiff(served []string, documented map[string]openAPIOperation) (undocumented, unserved []string) {
	for _, r := range served {
		if _, ok := documented[r]; !ok {
			undocumented = append(undocumented, r)
		}
	}
	for r := range documented {
		if !slices.Contains(served, r) {
			unserved = append(unserved, r)
		}
	}
	slices.Sort(unserved)
	return undocumented, unserved
}

func TestOpenAPIDocumentIsWellFormed(t *testing.T) {
	spec := loadOpenAPISpec(t)
	if !strings.HasPrefix(spec.version, "3.1") {
		t.Errorf(`"openapi" is %q, want 3.1.x`, spec.version)
	}
	if bearer, _ := spec.resolve("#/components/securitySchemes/BearerAuth"); fmt.Sprint(bearer.(map[string]any)["type"], " ",
		bearer.(map[string]any)["scheme"]) != "http bearer" {
		t.Errorf("the BearerAuth scheme is %v, want type http, scheme bearer", bearer)
	}
	if len(spec.operations) == 0 {
		t.Fatal("the document has no operations")
	}

	for _, ref := range refs(spec.tree) {
		if !strings.HasPrefix(ref, "#/components/") {
			t.Errorf("$ref %q: only references into #/components/ are expected", ref)
			continue
		}
		if _, ok := spec.resolve(ref); !ok {
			t.Errorf("$ref %q names no component", ref)
		}
	}

	seenIDs := make(map[string]string)
	pathParam := regexp.MustCompile(`\{([^}]+)\}`)
	for key, op := range spec.operations {
		switch {
		case op.OperationID == "":
			t.Errorf("%s has no operationId", key)
		case seenIDs[op.OperationID] != "":
			t.Errorf("%s and %s share the operationId %q", key, seenIDs[op.OperationID], op.OperationID)
		default:
			seenIDs[op.OperationID] = key
		}
		if len(op.Responses) == 0 {
			t.Errorf("%s documents no response", key)
		}
		for status, raw := range op.Responses {
			if r := spec.object(t, raw); r != nil && r["description"] == nil {
				t.Errorf("%s: response %s has no description", key, status)
			}
		}
		if spec.needsAPIKey(op) && op.Scope == "" {
			t.Errorf("%s needs an API key but names no x-required-scope", key)
		}
		if op.Scope != "" && !slices.Contains(bgcheck.Scopes, op.Scope) {
			t.Errorf("%s: x-required-scope %q is not a scope", key, op.Scope)
		}
		for _, req := range spec.securityOf(op) {
			for scheme := range req {
				if _, ok := spec.resolve("#/components/securitySchemes/" + scheme); !ok {
					t.Errorf("%s: security scheme %q is not in components.securitySchemes", key, scheme)
				}
			}
		}
		if spec.needsAPIKey(op) && spec.needsBearer(op) {
			t.Errorf("%s names both an API key and a bearer token: the router asks for one or the other", key)
		}
		if spec.needsBearer(op) && op.Responses["401"] == nil {
			t.Errorf("%s needs a bearer token but documents no 401", key)
		}
		switch {
		case op.Role == "":
		case op.Role != bgcheck.RoleAdmin && op.Role != bgcheck.RoleConsumer:
			t.Errorf("%s: x-required-role %q is not a role", key, op.Role)
		case !spec.needsBearer(op):
			t.Errorf("%s: x-required-role without BearerAuth", key)
		case op.Responses["403"] == nil:
			t.Errorf("%s is for %s users but documents no 403", key, op.Role)
		}

		spec.checkRateLimitDocs(t, key, op)

		// Every {name} in the path is declared as a path parameter, by the path item or the
		// operation.
		path := key[strings.Index(key, " ")+1:]
		declared := make(map[string]bool)
		for _, raw := range slices.Concat(spec.pathParams[path], op.Parameters) {
			p := spec.object(t, raw)
			if p["in"] == "path" {
				declared[fmt.Sprint(p["name"])] = p["required"] == true
			}
		}
		for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
			if !declared[m[1]] {
				t.Errorf("%s: path parameter %q is not declared (as required)", key, m[1])
			}
		}
	}
}

// rateHeaders are the headers API.md §7 puts on every answer of a rate-limited operation.
var rateHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}

// checkRateLimitDocs holds an operation's rate-limit documentation to API.md §7: the class follows
// from the security (API key: platform; bearer: consumer; open sign-in routes: auth), every
// response documents the X-RateLimit-* headers, and 429 is documented with Retry-After. Operations
// of no class (the operational ones) document none of it.
func (s *openAPISpec) checkRateLimitDocs(t *testing.T, key string, op openAPIOperation) {
	t.Helper()
	want := ""
	switch path := key[strings.Index(key, " ")+1:]; {
	case s.needsAPIKey(op):
		want = ratelimit.Platform.String()
	case s.needsBearer(op):
		want = ratelimit.Consumer.String()
	case strings.HasPrefix(path, "/api/v1/auth/"):
		want = ratelimit.Auth.String()
	}
	if op.RateClass != want {
		t.Errorf("%s: x-rate-limit-class %q, want %q", key, op.RateClass, want)
	}
	if (op.Responses["429"] != nil) != (want != "") {
		t.Errorf("%s: 429 documented: %v; rate class %q", key, op.Responses["429"] != nil, want)
	}
	for status, raw := range op.Responses {
		headers, _ := s.object(t, raw)["headers"].(map[string]any)
		for _, h := range append(slices.Clone(rateHeaders), "Retry-After") {
			_, documented := headers[h]
			switch expected := want != "" && (h != "Retry-After" || status == "429"); {
			case expected && !documented:
				t.Errorf("%s: response %s does not document %s", key, status, h)
			case documented && !expected:
				t.Errorf("%s: response %s documents %s, which it never carries", key, status, h)
			}
		}
	}
}

func TestOpenAPIMatchesRouter(t *testing.T) {
	spec := loadOpenAPISpec(t)
	served := routerRoutes(t, New(nil, nil, Options{}).Handler())
	if len(served) == 0 {
		t.Fatal("walking the router found no routes")
	}
	undocumented, unserved := routeDiff(served, spec.operations)
	for _, r := range undocumented {
		t.Errorf("route %s is served but not in openapi.json", r)
	}
	for _, r := range unserved {
		t.Errorf("openapi.json documents %s, which the router does not serve", r)
	}

	// The comparison itself must notice a route added without documentation.
	s := New(nil, nil, Options{})
	s.extraKeyRoutes = func(r chi.Router) {
		r.Get("/undocumented/{thingID}/", func(http.ResponseWriter, *http.Request) {})
	}
	undocumented, _ = routeDiff(routerRoutes(t, s.Handler()), spec.operations)
	if !slices.Contains(undocumented, "GET /api/v1/undocumented/{thingID}") {
		t.Errorf("an extra route went unnoticed: undocumented routes are %q", undocumented)
	}
}

func TestOpenAPIServedDocument(t *testing.T) {
	rec := httptest.NewRecorder()
	quiet := Options{Logger: slog.New(slog.DiscardHandler)}
	New(nil, nil, quiet).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/openapi.json: status %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if !bytes.Equal(rec.Body.Bytes(), openAPIDocument) {
		t.Error("the body is not the embedded document")
	}
}

// openAPIKeys issues keys with chosen scopes for one account on a real database.
type openAPIKeys struct {
	t         *testing.T
	db        *postgres.DB
	accountID string
}

// add stores a test-mode key with the given scopes and returns the raw key.
func (k openAPIKeys) add(scopes []string) string {
	g := auth.NewAPIKey(bgcheck.ModeTest)
	if _, err := k.db.CreateAPIKey(context.Background(), bgcheck.NewAPIKey{
		AccountID: k.accountID, Mode: bgcheck.ModeTest, Hash: g.Hash, Prefix: g.Prefix, Last4: g.Last4, Scopes: scopes,
	}); err != nil {
		k.t.Fatal(err)
	}
	return g.Raw
}

// openAPIUsers signs in portal users of one account on a real database.
type openAPIUsers struct {
	t         *testing.T
	srv       *Server
	accountID string
}

// token creates a user of the role in the account, starts a sign-in for them and returns its
// access token: a fresh one each time, since an operation tried (logout) may end the sign-in.
func (u openAPIUsers) token(role bgcheck.Role) string {
	u.t.Helper()
	ctx := context.Background()
	user, err := u.srv.db.CreateUser(ctx, postgres.NewUser{AccountID: u.accountID, Email: bgcheck.NewID("u") + "@example.com", Role: role})
	if err != nil {
		u.t.Fatal(err)
	}
	sub := auth.Subject{UserID: user.ID, AccountID: u.accountID, Role: role, SessionID: bgcheck.NewID(prefixSession)}
	pair, refresh, err := u.srv.issuePair(sub)
	if err != nil {
		u.t.Fatal(err)
	}
	if err := u.srv.db.StartSession(ctx, sub.SessionID, user.ID, refresh.ID, refresh.ExpiresAt); err != nil {
		u.t.Fatal(err)
	}
	return pair.AccessToken
}

// TestOpenAPISecurityMatchesRouter sends each documented operation a request the handler refuses
// before it needs the database (a malformed path id, ?limit=0, an empty body) and checks that the
// router enforces the authentication, the scope and the role the document states, and answers only
// statuses the document lists.
func TestOpenAPISecurityMatchesRouter(t *testing.T) {
	spec := loadOpenAPISpec(t)
	srv, _ := newInternalServer(t, slog.New(slog.DiscardHandler))
	acct, _, err := srv.db.Bootstrap(context.Background(), "Scopes",
		postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := openAPIKeys{t: t, db: srv.db, accountID: acct.ID}
	users := openAPIUsers{t: t, srv: srv, accountID: acct.ID}
	// Limits that tell the classes apart by X-RateLimit-Limit, and never run out here.
	limitOf := map[string]string{"auth": "100001", "consumer": "100002", "platform": "100003"}
	limits, err := limiter.New(ratelimit.Limits{
		Auth:     ratelimit.Rule{Limit: 100001, Window: time.Hour},
		Consumer: ratelimit.Rule{Limit: 100002, Window: time.Hour},
		Platform: ratelimit.Rule{Limit: 100003, Window: time.Hour},
	}, limiter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer limits.Close(context.Background())
	srv.opts.RateLimits = limits
	h := srv.Handler()
	pathParam := regexp.MustCompile(`\{[^}]+\}`)

	send := func(method, path, header, value string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, pathParam.ReplaceAllString(path, "malformed")+"?limit=0", nil)
		if value != "" {
			req.Header.Set(header, value)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	call := func(key, method, path string) *httptest.ResponseRecorder { return send(method, path, "X-API-Key", key) }
	bearer := func(token, method, path string) *httptest.ResponseRecorder {
		return send(method, path, "Authorization", "Bearer "+token)
	}
	// answer checks that rec is a status op documents, with the documented media type, and
	// returns its problem code ("" for a success).
	answer := func(t *testing.T, op openAPIOperation, rec *httptest.ResponseRecorder) string {
		t.Helper()
		if rec.Header().Get("X-Request-Id") == "" {
			t.Error("no X-Request-Id header")
		}
		// The class the document states is the class that counted the request.
		if got, want := rec.Header().Get("X-RateLimit-Limit"), limitOf[op.RateClass]; got != want {
			t.Errorf("answered %d with X-RateLimit-Limit %q, want %q (class %q)", rec.Code, got, want, op.RateClass)
		}
		raw, ok := op.Responses[fmt.Sprint(rec.Code)]
		if !ok {
			t.Errorf("answered %d, which is not documented; body %s", rec.Code, rec.Body)
			return ""
		}
		if rec.Code < 400 {
			return ""
		}
		content, _ := spec.object(t, raw)["content"].(map[string]any)
		if _, ok := content["application/problem+json"]; !ok {
			t.Errorf("status %d is not documented as application/problem+json", rec.Code)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("status %d has Content-Type %q", rec.Code, ct)
		}
		var p problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Errorf("status %d: body is not a problem: %v", rec.Code, err)
		}
		return string(p.Code) + " " + p.Detail
	}

	for _, key := range slices.Sorted(maps.Keys(spec.operations)) {
		op := spec.operations[key]
		method, path, _ := strings.Cut(key, " ")
		t.Run(key, func(t *testing.T) {
			if spec.needsBearer(op) {
				if got := answer(t, op, call("", method, path)); !strings.HasPrefix(got, string(bgcheck.CodeMissingToken)) {
					t.Errorf("without a token: answered %q, want %s", got, bgcheck.CodeMissingToken)
				}
				if got := answer(t, op, bearer("not.a.jwt", method, path)); !strings.HasPrefix(got, string(bgcheck.CodeInvalidToken)) {
					t.Errorf("with a malformed token: answered %q, want %s", got, bgcheck.CodeInvalidToken)
				}
				for _, role := range []bgcheck.Role{bgcheck.RoleConsumer, bgcheck.RoleAdmin} {
					rec := bearer(users.token(role), method, path)
					got := answer(t, op, rec)
					switch {
					case op.Role != "" && role != op.Role:
						if !strings.HasPrefix(got, string(bgcheck.CodeForbidden)+" ") {
							t.Errorf("as a %s: answered %q, want %s", role, got, bgcheck.CodeForbidden)
						}
					case rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden:
						t.Errorf("as a %s: answered %d: %s", role, rec.Code, rec.Body)
					}
				}
				return
			}
			if !spec.needsAPIKey(op) {
				// Documented as open: no API key is asked for.
				rec := call("", method, path)
				if rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden {
					t.Errorf("documented without security, but answered %d without a key: %s", rec.Code, rec.Body)
				}
				answer(t, op, rec)
				return
			}

			if got := answer(t, op, call("", method, path)); !strings.HasPrefix(got, string(bgcheck.CodeMissingAPIKey)) {
				t.Errorf("without a key: answered %q, want %s", got, bgcheck.CodeMissingAPIKey)
			}

			others := slices.DeleteFunc(slices.Clone(bgcheck.Scopes), func(s string) bool { return s == op.Scope })
			got := answer(t, op, call(keys.add(others), method, path))
			if want := string(bgcheck.CodeInsufficientScope) + " this key lacks the scope " + op.Scope; got != want {
				t.Errorf("with every scope but %s: answered %q, want %q", op.Scope, got, want)
			}

			rec := call(keys.add([]string{op.Scope}), method, path)
			answer(t, op, rec)
			if rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden {
				t.Errorf("with only the scope %s: answered %d: %s", op.Scope, rec.Code, rec.Body)
			}
		})
	}
}
