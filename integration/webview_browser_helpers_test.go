package integration

// A headless Chromium (Debian's chromium package) driven over the DevTools protocol by
// chromedp, for the internals view's browser test: open a page, read what the browser
// renders (innerText, a table cell found by its column header), and write screenshots when
// SAMSA_SCREENSHOTS names a folder (relative: to the repository root).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// webBrowser is one tab of a headless Chromium that lives as long as the test.
type webBrowser struct {
	t     *testing.T
	tab   context.Context
	shots string // SAMSA_SCREENSHOTS: where PNGs go ("" = none)
}

// chromiumPath finds the browser: $SAMSA_CHROMIUM, else chromium (Debian) or
// chromium-browser (Ubuntu) on PATH.
func chromiumPath() (string, error) {
	if p := os.Getenv("SAMSA_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	var errs []string
	for _, name := range []string{"chromium", "chromium-browser"} {
		p, err := exec.LookPath(name)
		if err == nil {
			return p, nil
		}
		errs = append(errs, err.Error())
	}
	return "", fmt.Errorf("%s (install Debian's chromium package: apt-get install chromium; scripts/test.sh does)", strings.Join(errs, "; "))
}

// startBrowser starts headless Chromium with a fresh profile, or skips the test with the
// reason when it is not installed or cannot start.
func startBrowser(t *testing.T) *webBrowser {
	t.Helper()
	path, err := chromiumPath()
	if err != nil {
		t.Skipf("browser test skipped: no Chromium: %v", err)
	}
	dir, err := os.MkdirTemp("", "samsa-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{} // groups_test.go; the browser's output, shown only when it fails to start
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in CI containers: Chromium's sandbox needs user namespaces
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(out),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser process to exit
		// Chromium's helpers can still write in the profile for a moment after it exits.
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	// The first Run starts the browser; it must not carry a timeout (that would end the
	// browser with it), so bound the start from here.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(tab) }()
	select {
	case err = <-started:
	case <-time.After(60 * time.Second):
		cancelTab()
		err = fmt.Errorf("no DevTools connection within 60s")
	}
	if err != nil {
		t.Skipf("browser test skipped: Chromium (%s) did not start: %v\n%s", path, err, tail(out.String(), 2000))
	}
	b := &webBrowser{t: t, tab: tab, shots: os.Getenv("SAMSA_SCREENSHOTS")}
	if b.shots != "" {
		if !filepath.IsAbs(b.shots) { // from the repository root, not integration/
			b.shots = filepath.Join("..", b.shots)
		}
		if err := os.MkdirAll(b.shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("browser: %s, profile %s", path, dir)
	return b
}

// on is the browser for (sub)test t: its failures end t, not the test that started it.
func (b *webBrowser) on(t *testing.T) *webBrowser {
	c := *b
	c.t = t
	return &c
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// run runs one action on the tab, bounded by 30 s.
func webRun[T any](b *webBrowser, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.tab, 30*time.Second)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// open navigates the tab to url and waits for the page to load; the page must answer 200.
func (b *webBrowser) open(url string) {
	b.t.Helper()
	resp, err := webRun(b, chromedp.NavigateResponse(url))
	if err != nil {
		b.t.Fatalf("browser: open %s: %v", url, err)
	}
	if resp.Status != 200 {
		b.t.Fatalf("browser: open %s: HTTP %d %s", url, resp.Status, resp.StatusText)
	}
}

// text is the page's text as the browser renders it (document.body.innerText).
func (b *webBrowser) text() string {
	b.t.Helper()
	s, err := webRun(b, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		b.t.Fatalf("browser: read the page's text: %v", err)
	}
	return s
}

// waitText waits until the rendered text has every one of want (the pages re-render their
// body every 2 s, so data that is still moving arrives without a reload).
func (b *webBrowser) waitText(want ...string) string {
	b.t.Helper()
	var s string
	waitFor(b.t, 30*time.Second, func() error {
		s = b.text()
		for _, w := range want {
			if !strings.Contains(s, w) {
				return fmt.Errorf("page has no %q; its text:\n%s", w, tail(s, 3000))
			}
		}
		return nil
	})
	return s
}

// webCellJS finds, in any table of the page whose first row holds the headers, the row
// whose cells under the match headers have those texts, and returns its cell under want
// (null when there is none). Headers compare trimmed and lower-cased.
const webCellJS = `(function(want, match) {
  for (const tbl of document.querySelectorAll("table")) {
    const rows = Array.from(tbl.rows);
    if (rows.length < 2) continue;
    const hdr = Array.from(rows[0].cells).map(c => c.innerText.trim().toLowerCase());
    const col = h => hdr.indexOf(h);
    if (col(want) < 0 || Object.keys(match).some(h => col(h) < 0)) continue;
    for (const r of rows.slice(1)) {
      const cells = Array.from(r.cells).map(c => c.innerText.trim());
      if (Object.entries(match).every(([h, v]) => cells[col(h)] === v)) return cells[col(want)] ?? null;
    }
  }
  return null;
})(%s, %s)`

// cell reads one table cell as the browser renders it: the column headed want in the row
// whose columns headed by match's keys read match's values; ok is false when no such cell.
func (b *webBrowser) cell(want string, match map[string]string) (string, bool) {
	b.t.Helper()
	w, _ := json.Marshal(strings.ToLower(want))
	m, _ := json.Marshal(match)
	v, err := webRun(b, chromedp.Evaluate[*string](fmt.Sprintf(webCellJS, w, m)))
	if err != nil {
		b.t.Fatalf("browser: read cell %q of %v: %v", want, match, err)
	}
	if v == nil {
		return "", false
	}
	return *v, true
}

// webShotMaxHeight bounds a screenshot (CSS pixels): a long page is cut there, which keeps
// each PNG small enough to commit.
const webShotMaxHeight = 1400

// screenshot writes the page (its top webShotMaxHeight pixels) as
// <SAMSA_SCREENSHOTS>/<name>.png, when that is set.
func (b *webBrowser) screenshot(name string) {
	b.t.Helper()
	if b.shots == "" {
		return
	}
	h, err := webRun(b, chromedp.Evaluate[float64](`document.documentElement.scrollHeight`))
	if err != nil {
		b.t.Fatalf("browser: page height: %v", err)
	}
	w, err := webRun(b, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`))
	if err != nil {
		b.t.Fatalf("browser: page width: %v", err)
	}
	clip := &page.Viewport{Width: w, Height: min(h, webShotMaxHeight), Scale: 1}
	png, err := webRun(b, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		beyond := true
		r, err := cdp.Call(ctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormatPng, Clip: clip, CaptureBeyondViewport: &beyond})
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	})
	if err != nil {
		b.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s (%.0fx%.0f, %d KB)", path, clip.Width, clip.Height, len(png)/1024)
}
