package postgres

// OverviewQueries are the admin dashboard's statements with example arguments for an account,
// for tests that EXPLAIN them.
func OverviewQueries(accountID string) map[string][]any {
	return map[string][]any{
		"counts":          {overviewCountsSQL, accountID, OverviewWindow},
		"failed":          {overviewFailedSQL, accountID, OverviewFailedDeliveries},
		"hourly":          {overviewHourlySQL, accountID},
		"endpoint health": {endpointHealthSQL, accountID, EndpointHealthWindow},
	}
}
