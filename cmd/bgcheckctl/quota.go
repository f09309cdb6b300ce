package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/config"
)

// cmdQuotaSet sets an account's monthly quota of checks (per mode; issue 15) and prints the live
// quota as it now stands.
func cmdQuotaSet(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("quota set", flag.ContinueOnError)
	account := fs.String("account", "", "the account's id (acct_…)")
	limit := fs.Int("limit", -1, "checks a month, 0 or more")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !bgcheck.ValidID(bgcheck.PrefixAccount, *account) || *limit < 0 {
		return usageError("quota set: give --account acct_… and --limit N (N ≥ 0)")
	}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.SetQuota(ctx, *account, *limit); err != nil {
		if bgcheck.ErrorCode(err) == bgcheck.CodeNotFound {
			return fmt.Errorf("quota set: no account %s", *account)
		}
		return err
	}
	q, err := db.FindQuota(ctx, bgcheck.Tenant{AccountID: *account, Mode: bgcheck.ModeLive})
	if err != nil {
		return err
	}
	return printJSON(stdout, q)
}
