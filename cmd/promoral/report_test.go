package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/promoral/promoral/internal/chrome"
)

// pageCheck is what the page reports about its images and figures.
type pageCheck struct {
	Images []struct {
		Src   string  `json:"src"`
		Width float64 `json:"width"`
	} `json:"images"`
	Figures []struct {
		ID     string  `json:"id"`
		Width  float64 `json:"width"`
		Height float64 `json:"height"`
	} `json:"figures"`
	Sections int `json:"sections"`
}

const pageCheckJS = `(() => ({
  images: Array.from(document.images).map(i => ({src: i.src.slice(0, 80), width: i.naturalWidth})),
  figures: Array.from(document.querySelectorAll('figure svg')).map(s => {
    const r = s.getBoundingClientRect();
    return {id: s.closest('figure').id, width: r.width, height: r.height};
  }),
  sections: document.querySelectorAll('section').length,
}))()`

// The real quickstart, reported, opened from file:// in headless Chromium:
// no console error, no uncaught exception, no request beyond the file,
// every image decoded and every figure laid out; a full-page screenshot is
// kept (and copied to $PROMORAL_REPORT_SCREENSHOT when set).
func TestReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quickstart and a browser")
	}
	ctx := chrome.Start(t, "report.html", 1280, 900, 5*time.Minute)
	base, _ := runQuickstart(t)
	dir := filepath.Join(base, "out", "quickstart")
	stdout, stderr, code := runCLI(t, "report", dir)
	if code != 0 {
		t.Fatalf("report failed (%d): %s", code, stderr)
	}
	if !strings.Contains(stderr, "not drawn: UMSS bars") {
		t.Errorf("report did not say which figures it left out: %q", stderr)
	}
	fitsEighty(t, stderr)
	page := filepath.Join(dir, "report.html")
	if !strings.Contains(stdout, page) {
		t.Errorf("report printed %q, want the path of report.html", stdout)
	}
	figs, _ := filepath.Glob(filepath.Join(dir, "figures", "*.svg"))
	if len(figs) == 0 {
		t.Fatal("the quickstart report drew no figure")
	}

	problems, err := chrome.Watch(ctx, func(u string) bool {
		return strings.HasPrefix(u, "file://") || strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "about:")
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[pageCheck](pageCheckJS))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(t.TempDir(), "report.png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("PROMORAL_REPORT_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, shot, 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d sections, %d figures, %d images; screenshot %s (%d KiB)", got.Sections, len(got.Figures), len(got.Images), png, len(shot)/1024)

	for _, p := range problems.List() {
		t.Error(p)
	}
	if got.Sections < 3 {
		t.Errorf("%d sections rendered", got.Sections)
	}
	if len(got.Figures) != len(figs) {
		t.Errorf("%d inline figures, want %d (one per figures/*.svg)", len(got.Figures), len(figs))
	}
	for _, f := range got.Figures {
		if f.Width <= 0 || f.Height <= 0 {
			t.Errorf("figure %s has an empty bounding box (%.0f×%.0f)", f.ID, f.Width, f.Height)
		}
	}
	for _, img := range got.Images {
		if img.Width <= 0 {
			t.Errorf("image %s did not load", img.Src)
		}
	}
	if len(shot) < 10000 {
		t.Errorf("the screenshot is suspiciously small (%d bytes)", len(shot))
	}
}
