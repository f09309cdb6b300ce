package devtemporal

// Tuned returns the dynamic config that make dev and the end-to-end tests run the dev server with,
// measured with tools/bench/delivery on two cores (2026-11-21):
//   - system.forceSearchAttributesCacheRefreshOnRead=false: start-dev refreshes the search-attribute
//     cache on every read; turning that off cut Temporal's CPU per delivery by about 11%.
//   - matching.numTaskqueue{Read,Write}Partitions=1: with four partitions a workflow task could
//     land on one with no poller waiting and stall about 2 s.
//   - history.transferProcessorMaxPollRPS=100: the default 20 left tasks waiting up to 50 ms.
//
// Together: latency at 50 events/s went from p50 41 ms / p99 163 ms to 10 / 59 ms. The catch: a
// search attribute added later to an existing database file is accepted only after up to 60 s.
//
// Measured 2026-11-24, with eager workflow start:
//   - history.visibilityProcessorMaxPollRPS=2 with history.visibilityTaskBatchSize=1000: the
//     visibility queue is read twice a second, by the thousand. A delivery's workflow usually
//     closes before its start record is written, and the server skips start and upsert records
//     of closed workflows, so most deliveries cost one visibility write instead of two. Open
//     loop: 250 deliveries/s kept up (p99 245 ms) where 200/s had not (p99 2.1 s). The catch: a
//     running workflow appears in the Temporal UI's lists up to half a second late.
func Tuned() map[string]string {
	return map[string]string{
		"system.forceSearchAttributesCacheRefreshOnRead": "false",
		"matching.numTaskqueueReadPartitions":            "1",
		"matching.numTaskqueueWritePartitions":           "1",
		"history.transferProcessorMaxPollRPS":            "100",
		"history.visibilityProcessorMaxPollRPS":          "2",
		"history.visibilityTaskBatchSize":                "1000",
	}
}
