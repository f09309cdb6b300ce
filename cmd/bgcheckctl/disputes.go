package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/postgres"
)

// cmdDisputesResolve resolves a dispute of any account and mode as the consumer reporting agency
// (API.md §10: live-mode disputes are the operator's to resolve), with the API's effects: the
// report revised for a correction or a deletion, the events written, the workflows told.
func cmdDisputesResolve(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageError("disputes resolve: give the dispute id (dsp_…) first")
	}
	id := args[0]
	fs := flag.NewFlagSet("disputes resolve", flag.ContinueOnError)
	resolution := fs.String("resolution", "", "corrected, verified or deleted")
	note := fs.String("note", "", "what the reinvestigation found")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if !bgcheck.Resolution(*resolution).Valid() {
		return usageError("disputes resolve: --resolution must be corrected, verified or deleted")
	}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	d, err := db.ResolveDispute(ctx, "", id, postgres.DisputeResolution{
		Resolution: bgcheck.Resolution(*resolution), Note: strings.TrimSpace(*note), By: bgcheck.ResolvedByOperator,
	}, false)
	if bgcheck.ErrorCode(err) == bgcheck.CodeNotFound {
		return fmt.Errorf("disputes resolve: no dispute %s", id)
	}
	if err != nil {
		return fmt.Errorf("disputes resolve: %w", err)
	}
	return printJSON(stdout, d)
}
