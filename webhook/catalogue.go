package webhook

// EventTypeInfo describes one event type: what causes it and the JSON Schema (draft 2020-12) of
// its envelope's data. GET /api/v1/event-types lists them; the service's tests validate every
// event it emits against its schema.
type EventTypeInfo struct {
	Type        string         `json:"type"`
	Description string         `json:"description"`
	Schema      map[string]any `json:"schema"`
}

func object(required []string, props map[string]any) map[string]any {
	return map[string]any{"type": "object", "required": required, "properties": props, "additionalProperties": false}
}

func idOf(prefix string) map[string]any {
	return map[string]any{"type": "string", "pattern": "^" + prefix + "_[0-9a-f]{32}$"}
}

func enum(values ...string) map[string]any { return map[string]any{"type": "string", "enum": values} }

var (
	checkUUID = map[string]any{"type": "string", "format": "uuid",
		"pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", "description": "The check's id as a UUID."}
	dateTime  = map[string]any{"type": "string", "format": "date-time"}
	screening = enum("ssn_trace", "national_criminal", "county_criminal", "sex_offender", "motor_vehicle",
		"employment_verification", "education_verification")
	nullableString = map[string]any{"type": []any{"string", "null"}}
)

// Catalogue returns the event types of API.md §6, in the spec's order, with their data's schemas.
func Catalogue() []EventTypeInfo {
	return []EventTypeInfo{
		{EventCheckCreated, "A check was created; it waits for the candidate's consent.", object(
			[]string{"check_id", "status", "candidate_id", "package"}, map[string]any{
				"check_id": checkUUID, "status": enum("invitation_pending"), "candidate_id": idOf("cand"),
				"package": enum("basic", "standard", "driver", "employment")})},
		{EventCheckCompleted, "A check completed with its disposition; sent again when a dispute revises the assessment.", object(
			[]string{"check_id", "status", "disposition"}, map[string]any{
				"check_id": checkUUID, "status": enum("complete"), "disposition": enum("clear", "consider")})},
		{EventCheckFailed, "A check ended without completing: canceled (by the customer, or its invitation expired) or failed.", object(
			[]string{"check_id", "status", "reason"}, map[string]any{
				"check_id": checkUUID, "status": enum("canceled", "failed"), "reason": map[string]any{"type": "string"}})},
		{EventReportReady, "A check's report is ready, or was revised after a dispute (version 2 and up).", object(
			[]string{"check_id", "report_id", "candidate_id"}, map[string]any{
				"check_id": checkUUID, "report_id": idOf("rpt"), "candidate_id": idOf("cand"),
				"version": map[string]any{"type": "integer", "minimum": 2}})},
		{EventAdverseActionCreated, "An adverse action was started: the pre-adverse notice goes to the candidate.", object(
			[]string{"check_id", "adverse_action_id", "status", "finalize_at"}, map[string]any{
				"check_id": checkUUID, "adverse_action_id": idOf("aa"), "status": enum("pending"), "finalize_at": dateTime})},
		{EventAdverseActionFinalized, "An adverse action's waiting period ended: the final notice went to the candidate.", object(
			[]string{"check_id", "adverse_action_id", "status"}, map[string]any{
				"check_id": checkUUID, "adverse_action_id": idOf("aa"), "status": enum("finalized")})},
		{EventDisputeFiled, "The candidate disputed a screening of their report; the check's status is dispute.", object(
			[]string{"check_id", "dispute_id", "status", "screening", "due_at"}, map[string]any{
				"check_id": checkUUID, "dispute_id": idOf("dsp"), "status": enum("open"), "screening": screening, "due_at": dateTime})},
		{EventDisputeResolved, "A dispute was resolved; corrected or deleted revises the report.", object(
			[]string{"check_id", "dispute_id", "status", "screening", "resolution"}, map[string]any{
				"check_id": checkUUID, "dispute_id": idOf("dsp"), "status": enum("resolved"), "screening": screening,
				"resolution": enum("corrected", "verified", "deleted")})},
		{EventCandidateUpdated, "A candidate's details changed; data is the candidate as GET /candidates/{id} shows it.", object(
			[]string{"id", "mode", "first_name", "last_name", "email", "phone", "dob", "created_at", "updated_at"}, map[string]any{
				"id": idOf("cand"), "mode": enum("test", "live"), "first_name": map[string]any{"type": "string"},
				"last_name": map[string]any{"type": "string"}, "email": nullableString, "phone": nullableString,
				"dob": map[string]any{"type": []any{"string", "null"}, "format": "date"}, "created_at": dateTime, "updated_at": dateTime})},
	}
}
