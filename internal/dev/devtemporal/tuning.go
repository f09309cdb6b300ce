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
//
// Measured 2026-11-25:
//   - history.hostLevelCacheMaxSize=8192 (the CLI's dev server sets about the same for itself):
//     temporal-server keeps up to 128,000 workflows' mutable state in memory for an hour by
//     default, so every delivery it ran stays in its Go heap, and the collector's marking grows
//     with it (on the cluster on PostgreSQL after 22,000 deliveries: 985 MB resident, 402 MB
//     with the cap). A delivery's workflow needs its state for seconds. At 200 events/s after
//     30,000 deliveries on the server on SQLite, p99 155 and 207 ms against 407, 565 and 579 ms;
//     on the cluster on PostgreSQL at 150 events/s, p99 162 ms against 462 ms. 2048 was as good
//     in the open loop but drained a backlog of 12,000 in 90 s against 41–43 s.
func Tuned() map[string]string {
	return map[string]string{
		"system.forceSearchAttributesCacheRefreshOnRead": "false",
		"matching.numTaskqueueReadPartitions":            "1",
		"matching.numTaskqueueWritePartitions":           "1",
		"history.transferProcessorMaxPollRPS":            "100",
		"history.visibilityProcessorMaxPollRPS":          "2",
		"history.visibilityTaskBatchSize":                "1000",
		"history.hostLevelCacheMaxSize":                  "8192",
	}
}
