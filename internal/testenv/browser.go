package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard's browser tests drive Debian's chromium, headless, through chromedp.

// LiveWithin is how long the browser tests wait for a change to show on an open page without a reload. The
// dashboard's goal is a second; the tests allow more because CI shares two cores with four control planes,
// and they prove the page updates by itself, not how fast.
const LiveWithin = 5 * time.Second

// Browser starts a headless Chromium at 1366×768, or skips the test saying how to install it.
func Browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("the dashboard's browser tests need Chromium: apt-get install chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1366, 768),
		chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, on a context without a deadline
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// WaitText waits until the element sel contains want.
func WaitText(ctx context.Context, sel, want string, timeout time.Duration) error {
	q, _ := json.Marshal(sel)
	w, _ := json.Marshal(want)
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.innerText.includes(%s); })()`, q, w),
		chromedp.WithPollingTimeout(timeout)))
	return err
}

// Text is the text of the element sel.
func Text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// Screenshot saves the viewport as a PNG at path.
func Screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// NoReload marks the page (set) or checks the mark: a page that reloaded loses it.
func NoReload(t *testing.T, ctx context.Context, set bool) {
	t.Helper()
	expr := "window.__sameDocument === true"
	if set {
		expr = "window.__sameDocument = true"
	}
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil || !same {
		t.Fatalf("the page reloaded (%v)", err)
	}
}
