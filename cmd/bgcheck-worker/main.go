// Command bgcheck-worker runs bgcheck's Temporal worker: it executes delivery workflows and their
// attempts. Run as many as the load needs, beside any number of API instances.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.FromEnv()
	if err == nil {
		err = cfg.CheckProduction(config.ProcessWorker)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // one line per variable at fault
		os.Exit(2)
	}
	log := config.NewLogger(cfg)
	if err := worker.Run(ctx, cfg, log); err != nil {
		log.Error("bgcheck-worker stopped", "err", err)
		os.Exit(1)
	}
}
