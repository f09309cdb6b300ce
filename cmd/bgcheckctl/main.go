// Command bgcheckctl is the operator's tool (API.md §9): apply migrations, bootstrap an account,
// issue and revoke API keys, create portal users, and resolve disputes as the agency; and, for developers, a local webhook
// receiver that checks signatures (listen).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bgcheck/bgcheck/config"
)

const usage = `usage: bgcheckctl <command> [flags]

commands:
  migrate                                   apply pending database migrations
  bootstrap --account NAME --admin-email E --admin-password P
                                            create an account, its admin and a test and a live key
  keys create --account ID --mode test|live [--name N] [--scopes a,b] [--expires-at T] [--allow-ip CIDR]...
  keys revoke ID
  users create --account ID --email E --role admin|consumer [--name N]   (password on stdin)
  quota set --account ID --limit N          the account's monthly quota of checks (each mode)
  disputes resolve ID --resolution corrected|verified|deleted [--note N]
                                            resolve a dispute of any mode, as the reporting agency
  secrets rotate-key                        re-encrypt every webhook signing secret and SSO client secret under
                                            BGCHECK_SECRETS_KEY (the old key in BGCHECK_SECRETS_PREVIOUS_KEYS meanwhile)
  sso verify-domain --connection ID --domain D
                                            mark a domain an SSO connection claims as verified, on the
                                            operator's word (when its DNS TXT record cannot be checked)
  listen --secret whsec_… [--addr 127.0.0.1:9000] [--path /webhooks] [--forward-to URL]
                                            receive deliveries locally: check each signature, print
                                            a line per delivery, optionally forward it; Ctrl-C stops

DATABASE_URL selects the database (default ` + config.DefaultDatabaseURL + `); listen needs none.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bgcheckctl:", err)
		if _, ok := err.(usageError); ok {
			fmt.Fprint(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a mistake in the command line, answered with the usage text.
type usageError string

func (e usageError) Error() string { return string(e) }

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError("no command given")
	}
	if args[0] == "listen" { // needs neither the database nor the rest of the configuration
		return cmdListen(ctx, args[1:], stdout)
	}
	cfg, err := config.FromEnv()
	if err == nil {
		err = cfg.CheckProduction(config.ProcessCLI)
	}
	if err != nil {
		return err
	}
	cmd, rest := args[0], args[1:]
	if (cmd == "keys" || cmd == "users" || cmd == "secrets" || cmd == "disputes" || cmd == "quota" || cmd == "sso") && len(rest) > 0 {
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	switch cmd {
	case "migrate":
		return cmdMigrate(ctx, cfg, stdout)
	case "bootstrap":
		return cmdBootstrap(ctx, cfg, rest, stdout)
	case "keys create":
		return cmdKeysCreate(ctx, cfg, rest, stdout)
	case "keys revoke":
		return cmdKeysRevoke(ctx, cfg, rest, stdout)
	case "users create":
		return cmdUsersCreate(ctx, cfg, rest, stdin, stdout)
	case "quota set":
		return cmdQuotaSet(ctx, cfg, rest, stdout)
	case "disputes resolve":
		return cmdDisputesResolve(ctx, cfg, rest, stdout)
	case "secrets rotate-key":
		return cmdSecretsRotateKey(ctx, cfg, rest, stdout)
	case "sso verify-domain":
		return cmdSSOVerifyDomain(ctx, cfg, rest, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError(fmt.Sprintf("unknown command %q", cmd))
}

// parseFlags parses a subcommand's flags, reporting mistakes as usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usageError(fmt.Sprintf("%s: %v", fs.Name(), err))
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0)))
	}
	return nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
