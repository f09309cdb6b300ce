// Command bgcheck-api serves bgcheck's HTTP API. It applies pending migrations at start, so a
// fresh database is ready on first run; several instances may start at once.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/bgcheck/bgcheck/apiserver"
	"github.com/bgcheck/bgcheck/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.FromEnv()
	if err == nil {
		err = cfg.CheckProduction(config.ProcessAPI)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // one line per variable at fault
		os.Exit(2)
	}
	log := config.NewLogger(cfg)
	if err := apiserver.Run(ctx, cfg, log); err != nil {
		log.Error("bgcheck-api stopped", "err", err)
		os.Exit(1)
	}
}
