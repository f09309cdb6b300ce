package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/secretbox"
)

// openDB connects and applies pending migrations, so every command works on a fresh database.
func openDB(ctx context.Context, cfg config.Config) (*postgres.DB, error) {
	db, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// cmdSecretsRotateKey re-encrypts every endpoint secret and SSO client secret not sealed under
// the current key (and any endpoint secret still in plaintext). Rotation: put the new key in BGCHECK_SECRETS_KEY and the old one in
// BGCHECK_SECRETS_PREVIOUS_KEYS everywhere, restart, run this, then drop the old key.
func cmdSecretsRotateKey(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	if err := parseFlags(flag.NewFlagSet("secrets rotate-key", flag.ContinueOnError), args); err != nil {
		return err
	}
	if cfg.SecretsKey == "" && cfg.Production() {
		return errors.New("BGCHECK_SECRETS_KEY is not set: it names the key to re-encrypt under")
	}
	secrets, err := secretbox.Parse(cfg.SecretsKeys())
	if err != nil {
		return fmt.Errorf("BGCHECK_SECRETS_KEY: %w", err)
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.WithSecrets(secrets))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return err
	}
	n, err := db.ResealSecrets(ctx, false)
	if err != nil {
		return fmt.Errorf("re-encrypted %d endpoint secrets, then: %w", n, err)
	}
	sso, err := db.ResealSSOSecrets(ctx)
	if err != nil {
		return fmt.Errorf("re-encrypted %d endpoint secrets and %d SSO client secrets, then: %w", n, sso, err)
	}
	return printJSON(stdout, map[string]any{"reencrypted": n, "sso_client_secrets_reencrypted": sso, "key_id": secrets.CurrentKeyID()})
}

func cmdMigrate(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	db, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	return printJSON(stdout, map[string]any{"applied": applied})
}

// keyJSON is how the CLI prints a key it has just issued: the only time the raw key is shown.
type keyJSON struct {
	*bgcheck.APIKey
	Key string `json:"key"`
}

func cmdBootstrap(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bootstrap", flag.ContinueOnError)
	account := fs.String("account", "", "account name")
	email := fs.String("admin-email", "", "e-mail of the first admin user")
	password := fs.String("admin-password", "", "password of the first admin user (at least 10 characters)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *account == "" || *email == "" || *password == "" {
		return usageError("bootstrap: --account, --admin-email and --admin-password are required")
	}
	if len(*password) < 10 {
		return usageError("bootstrap: --admin-password must be at least 10 characters")
	}
	hash, err := auth.HashPassword(*password)
	if err != nil {
		return err
	}
	// One full-access key per mode, issued by the same rules as keys create.
	var keys []bgcheck.NewAPIKey
	out := map[string]string{}
	for _, mode := range []bgcheck.Mode{bgcheck.ModeTest, bgcheck.ModeLive} {
		k, err := auth.IssueAPIKey(auth.KeySpec{Mode: mode, Name: "default " + string(mode) + " key"}, time.Now())
		if err != nil {
			return err
		}
		keys, out[string(mode)+"_key"] = append(keys, k.Record("")), k.Raw
	}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	acct, admin, err := db.Bootstrap(ctx, *account,
		postgres.NewUser{Email: *email, Name: "", Role: bgcheck.RoleAdmin, PasswordHash: hash}, keys)
	if err != nil {
		return err
	}
	out["account_id"], out["admin_user_id"] = acct.ID, admin.ID
	return printJSON(stdout, out)
}

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// keyFlags names the flag of keys create behind each field auth.IssueAPIKey may refuse.
var keyFlags = map[string]string{
	"name": "--name", "mode": "--mode", "scopes": "--scopes", "expires_at": "--expires-at", "allowed_ips": "--allow-ip",
}

func cmdKeysCreate(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	account := fs.String("account", "", "account id (acct_…)")
	mode := fs.String("mode", "", "test or live")
	name := fs.String("name", "", "a name to tell the key apart")
	scopes := fs.String("scopes", "", "comma-separated scopes; none means full access")
	expires := fs.String("expires-at", "", "RFC 3339 time after which the key stops working")
	var allow multiFlag
	fs.Var(&allow, "allow-ip", "IP address or CIDR prefix the key may be used from (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *account == "" {
		return usageError("keys create: --account is required")
	}
	spec := auth.KeySpec{Name: *name, Mode: bgcheck.Mode(*mode), AllowedIPs: allow}
	for _, s := range strings.Split(*scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			spec.Scopes = append(spec.Scopes, s)
		}
	}
	if *expires != "" {
		spec.ExpiresAt = expires
	}
	// The admin API's rules (auth.IssueAPIKey), its field errors told as the flags they came from.
	issued, err := auth.IssueAPIKey(spec, time.Now())
	if err != nil {
		var e *bgcheck.Error
		if !errors.As(err, &e) {
			return err
		}
		msgs := make([]string, len(e.Fields))
		for i, f := range e.Fields {
			msgs[i] = keyFlags[f.Field] + " " + f.Message
		}
		return usageError("keys create: " + strings.Join(msgs, "; "))
	}

	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	key, err := db.CreateAPIKey(ctx, issued.Record(*account))
	if err != nil {
		if bgcheck.ErrorCode(err) == bgcheck.CodeNotFound {
			return fmt.Errorf("keys create: no account %s", *account)
		}
		return err
	}
	return printJSON(stdout, keyJSON{key, issued.Raw})
}

func cmdKeysRevoke(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return usageError("keys revoke: give exactly one key id (key_…)")
	}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.RevokeAPIKey(ctx, "", args[0]); err != nil {
		if bgcheck.ErrorCode(err) == bgcheck.CodeNotFound {
			return fmt.Errorf("keys revoke: no key %s", args[0])
		}
		return err
	}
	return printJSON(stdout, map[string]any{"id": args[0], "revoked": true})
}

func cmdUsersCreate(ctx context.Context, cfg config.Config, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("users create", flag.ContinueOnError)
	account := fs.String("account", "", "account id (acct_…)")
	email := fs.String("email", "", "the user's e-mail")
	role := fs.String("role", "", "admin or consumer")
	name := fs.String("name", "", "the user's name")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	r := bgcheck.Role(*role)
	if *account == "" || *email == "" || (r != bgcheck.RoleAdmin && r != bgcheck.RoleConsumer) {
		return usageError("users create: --account, --email and --role admin|consumer are required")
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return err
	}
	password := strings.TrimRight(line, "\r\n")
	if len(password) < 10 {
		return usageError("users create: the password on stdin must be at least 10 characters")
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return err
	}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	u, err := db.CreateUser(ctx, postgres.NewUser{AccountID: *account, Email: *email, Name: *name, Role: r, PasswordHash: hash})
	if err != nil {
		if bgcheck.ErrorCode(err) == bgcheck.CodeNotFound {
			return fmt.Errorf("users create: no account %s", *account)
		}
		return err
	}
	return printJSON(stdout, u)
}
