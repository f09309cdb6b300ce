package devenv

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/webhook"
)

// Demo is the account a local development run works in: what `bgcheckctl bootstrap` prints,
// plus the admin's credentials. It is kept in a file so that every run shows the same keys.
type Demo struct {
	AccountID     string `json:"account_id"`
	AdminUserID   string `json:"admin_user_id"`
	AdminEmail    string `json:"admin_email"`
	AdminPassword string `json:"admin_password"`
	TestKey       string `json:"test_key"`
	LiveKey       string `json:"live_key"`
	// The local receiver's endpoint, registered for the test key by EnsureReceiverEndpoint.
	ReceiverEndpointID string `json:"receiver_endpoint_id,omitempty"`
	ReceiverURL        string `json:"receiver_url,omitempty"`
	ReceiverSecret     string `json:"receiver_secret,omitempty"`
}

// EnsureReceiverEndpoint makes sure the demo account's test mode has a webhook endpoint for every
// event type at url, the local receiver of make dev, and records its id and secret in the demo
// file. An endpoint recorded before is reused while it exists with that URL.
func EnsureReceiverEndpoint(ctx context.Context, db *postgres.DB, path string, demo *Demo, url string) error {
	tenant := bgcheck.Tenant{AccountID: demo.AccountID, Mode: bgcheck.ModeTest}
	if demo.ReceiverEndpointID != "" && demo.ReceiverURL == url {
		ep, err := db.FindEndpoint(ctx, tenant, demo.ReceiverEndpointID)
		if err == nil && ep.URL == url && ep.Enabled {
			return nil
		}
		if err != nil && bgcheck.ErrorCode(err) != bgcheck.CodeNotFound {
			return err
		}
	}
	secret := webhook.NewSecret()
	ep, err := db.CreateEndpoint(ctx, tenant, bgcheck.WebhookEndpoint{
		URL: url, Events: []string{webhook.AllEvents}, Description: "make dev's local receiver", Enabled: true, Secret: secret,
	})
	if err != nil {
		return fmt.Errorf("devenv: register the local receiver: %w", err)
	}
	demo.ReceiverEndpointID, demo.ReceiverURL, demo.ReceiverSecret = ep.ID, url, secret
	return writeDemo(path, *demo)
}

// EnsureDemo returns the demo account recorded in path when both its keys still work in db;
// otherwise (first run, a wiped database, another DATABASE_URL) it bootstraps a new account, with
// an admin and a test and a live key of full access, and records it in path. created reports
// which happened. The file holds raw keys and a password, so it is readable by its owner only.
func EnsureDemo(ctx context.Context, db *postgres.DB, path string) (demo Demo, created bool, err error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &demo); err != nil {
			return Demo{}, false, fmt.Errorf("devenv: %s: %w (delete it to start a new demo account)", path, err)
		}
		ok, err := demoKeysWork(ctx, db, demo)
		if err != nil || ok {
			return demo, false, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return Demo{}, false, fmt.Errorf("devenv: %w", err)
	}

	demo, err = bootstrapDemo(ctx, db)
	if err != nil {
		return Demo{}, false, err
	}
	return demo, true, writeDemo(path, demo)
}

func bootstrapDemo(ctx context.Context, db *postgres.DB) (Demo, error) {
	// A fresh e-mail each time: e-mails are unique across accounts, and an earlier demo account
	// may still be in the database after its file was deleted.
	suffix := strings.ToLower(rand.Text()[:8])
	d := Demo{AdminEmail: "demo-" + suffix + "@example.com", AdminPassword: rand.Text()}
	hash, err := auth.HashPassword(d.AdminPassword)
	if err != nil {
		return Demo{}, err
	}
	testKey, liveKey := auth.NewAPIKey(bgcheck.ModeTest), auth.NewAPIKey(bgcheck.ModeLive)
	acct, admin, err := db.Bootstrap(ctx, "Demo",
		postgres.NewUser{Email: d.AdminEmail, Name: "Demo Admin", Role: bgcheck.RoleAdmin, PasswordHash: hash},
		[]bgcheck.NewAPIKey{keyRecord(testKey, bgcheck.ModeTest, "demo test key"), keyRecord(liveKey, bgcheck.ModeLive, "demo live key")})
	if err != nil {
		return Demo{}, fmt.Errorf("devenv: bootstrap the demo account: %w", err)
	}
	d.AccountID, d.AdminUserID, d.TestKey, d.LiveKey = acct.ID, admin.ID, testKey.Raw, liveKey.Raw
	return d, nil
}

func keyRecord(k auth.GeneratedKey, mode bgcheck.Mode, name string) bgcheck.NewAPIKey {
	return bgcheck.NewAPIKey{Name: name, Mode: mode, Hash: k.Hash, Prefix: k.Prefix, Last4: k.Last4}
}

// demoKeysWork reports whether both recorded keys exist in db, unrevoked, in the recorded account.
func demoKeysWork(ctx context.Context, db *postgres.DB, d Demo) (bool, error) {
	for _, raw := range []string{d.TestKey, d.LiveKey} {
		hash := auth.HashAPIKey(raw)
		key, err := db.FindAPIKeyByHash(ctx, hash[:])
		if bgcheck.ErrorCode(err) == bgcheck.CodeNotFound {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if key.RevokedAt != nil || key.AccountID != d.AccountID {
			return false, nil
		}
	}
	return true, nil
}

// writeDemo replaces the file in one rename, so an interrupted run leaves the old one or none.
func writeDemo(path string, d Demo) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("devenv: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("devenv: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("devenv: %w", err)
	}
	return nil
}
