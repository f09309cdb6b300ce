// Package browsertest starts headless Chromium for tests that drive the admin dashboard, with
// the flags these machines need (no sandbox as root, no background networking on a closed
// network) and a fresh profile.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Start starts a headless Chromium for the test and returns a context of one tab in it, and a
// function that opens another tab (its own sessionStorage, so its own sign-in). Without Chromium
// the test is skipped, except under CI, where it must run.
func Start(t *testing.T) (context.Context, func() context.Context) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; CI must run the dashboard's browser tests (apt-get install -y chromium)")
		}
		t.Skip("chromium is not installed (apt-get install -y chromium); skipping the dashboard's browser test")
	}
	// A fresh profile, removed once the browser has exited (t.TempDir would race its last writes).
	profile, err := os.MkdirTemp("", "bgcheck-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// The first context starts the browser; contexts made from it are more tabs in that browser.
	first, cancelFirst := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelFirst()
		cancelAlloc() // waits for the browser process to exit
	})
	withTimeout := func(ctx context.Context) context.Context {
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	newTab := func() context.Context {
		ctx, cancel := chromedp.NewContext(first)
		t.Cleanup(cancel)
		return withTimeout(ctx)
	}
	return withTimeout(first), newTab
}

// SignIn signs in on the dashboard at baseURL with a password: the e-mail first, then, as the
// e-mail's domain has no single sign-on, the password.
func SignIn(baseURL, email, password string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.Navigate(baseURL + "/dashboard/"),
		chromedp.WaitVisible("#email", chromedp.ByQuery),
		chromedp.SendKeys("#email", email, chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#password", chromedp.ByQuery),
		chromedp.SendKeys("#password", password, chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
	}
}
