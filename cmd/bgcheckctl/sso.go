package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/config"
)

// cmdSSOVerifyDomain marks a connection's claimed domain verified on the operator's word: for
// a domain whose DNS the service cannot query (a private deployment, a local one). Everywhere
// else the account proves it with the TXT record the dashboard shows.
func cmdSSOVerifyDomain(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sso verify-domain", flag.ContinueOnError)
	connection := fs.String("connection", "", "the SSO connection's id (ssoc_…)")
	domain := fs.String("domain", "", "a domain the connection claims")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !bgcheck.ValidID(bgcheck.PrefixSSOConnection, *connection) || *domain == "" {
		return usageError("sso verify-domain: give --connection ssoc_… and --domain D")
	}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	d := strings.ToLower(strings.TrimSpace(*domain))
	if err := db.VerifySSODomain(ctx, *connection, d); err != nil {
		if bgcheck.ErrorCode(err) == bgcheck.CodeNotFound {
			return fmt.Errorf("sso verify-domain: connection %s has no pending claim of %s", *connection, d)
		}
		return err
	}
	c, err := db.FindSSOConnectionByID(ctx, *connection)
	if err != nil {
		return err
	}
	return printJSON(stdout, map[string]any{"connection_id": c.ID, "verified_domains": c.VerifiedDomains()})
}
