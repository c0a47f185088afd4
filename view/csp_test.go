package view

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/promoral/promoral/internal/chrome"
	"github.com/promoral/promoral/report"
)

// directive returns the sources of one directive of a CSP ("" when absent).
func directive(csp, name string) (string, bool) {
	for _, d := range strings.Split(csp, ";") {
		d = strings.TrimSpace(d)
		if d == name || strings.HasPrefix(d, name+" ") {
			return strings.TrimSpace(strings.TrimPrefix(d, name)), true
		}
	}
	return "", false
}

// Every response of the view, pages, API, assets and the served report,
// refuses to be framed (X-Frame-Options and CSP frame-ancestors) and lets
// only the viewer's own scripts run: no inline script, no other origin.
func TestViewRefusesFramingAndForeignScripts(t *testing.T) {
	dir := copyRun(t, demoRun(t))
	if _, err := report.Generate(dir, report.Options{}); err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, dir)
	for _, path := range []string{"/", "/audit", "/case/0/3", "/api/meta", "/api/cases", "/assets/app.js", "/report.html", "/no-such-page"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if got := res.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("GET %s: X-Frame-Options %q, want DENY", path, got)
		}
		csp := res.Header.Get("Content-Security-Policy")
		if fa, _ := directive(csp, "frame-ancestors"); fa != "'none'" {
			t.Errorf("GET %s: frame-ancestors %q in %q", path, fa, csp)
		}
		if src, ok := directive(csp, "script-src"); !ok || src != "'self'" {
			t.Errorf("GET %s: script-src %q, want only 'self' (%q)", path, src, csp)
		}
		if def, _ := directive(csp, "default-src"); def != "'none'" {
			t.Errorf("GET %s: default-src %q, want 'none'", path, def)
		}
		style, _ := directive(csp, "style-src")
		if strings.Contains(style, "unsafe-inline") || !strings.HasPrefix(style, "'self'") {
			t.Errorf("GET %s: style-src %q", path, style)
		}
		if path == "/report.html" {
			// The report's own style sheet is allowed by its hash, and the
			// links the view adds are its own files.
			m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindSubmatch(body)
			if m == nil {
				t.Fatal("the report has no style sheet")
			}
			sum := sha256.Sum256(m[1])
			if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(style, want) {
				t.Errorf("the report's style-src %q lacks its style sheet's hash %s", style, want)
			}
			if !strings.Contains(string(body), `<script src="/assets/report-links.js"></script>`) {
				t.Error("the report does not load the view's links script")
			}
		}
	}
}

// The page itself needs nothing the policy forbids: no inline script or
// style element, no style or event-handler attribute, and app.js sets
// styles through the CSSOM, never as an attribute.
func TestPageNeedsNoInlineCode(t *testing.T) {
	inlineScript := regexp.MustCompile(`<script(\s[^>]*)?>\s*[^<\s]`)
	for _, p := range []string{"assets/index.html"} {
		data, _ := fs.ReadFile(assets, p)
		page := string(data)
		if inlineScript.MatchString(page) || strings.Contains(page, "<style") ||
			regexp.MustCompile(`\s(style|on[a-z]+)=`).MatchString(page) {
			t.Errorf("%s has inline script or style", p)
		}
	}
	if strings.Contains(reportLinks, "<style") || inlineScript.MatchString(reportLinks) {
		t.Errorf("the report links are inline: %s", reportLinks)
	}
	js, _ := fs.ReadFile(assets, "assets/app.js")
	if regexp.MustCompile(`setAttribute\(\s*['"]style|innerHTML|insertAdjacentHTML`).Match(js) {
		t.Error("app.js sets a style attribute or HTML")
	}
}

// In Chromium, a page of another origin that frames the view gets nothing:
// the frame is refused, so the viewer's script never loads in it and no
// button of it can be clicked through the hostile page.
func TestViewCannotBeFramedInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	ctx := chrome.Start(t, "promoral view framed", 800, 600, 2*time.Minute)
	base, _ := serve(t, demoRun(t))
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><title>hostile</title><iframe id="f" src="%s/audit" width="700" height="500"></iframe>
<script>document.getElementById('f').addEventListener('load', function () { document.title = 'frame loaded'; });</script>`, base)
	}))
	defer hostile.Close()
	var mu sync.Mutex
	var fromView []string
	if _, err := chrome.Watch(ctx, func(u string) bool {
		if strings.HasPrefix(u, base) {
			mu.Lock()
			fromView = append(fromView, strings.TrimPrefix(u, base))
			mu.Unlock()
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, chromedp.Navigate(hostile.URL)); err != nil {
		t.Fatal(err)
	}
	// The frame's load event comes after every script of the framed page
	// has run (app.js is a blocking script): by then, a frame that was
	// allowed would have asked the view for app.js.
	for k := 0; ; k++ {
		title, err := chromedp.Run(sctx, chromedp.Evaluate[string](`document.title`))
		if err == nil && title == "frame loaded" {
			break
		}
		if k == 600 {
			t.Fatalf("the hostile page's frame never finished loading (title %q, %v)", title, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(fromView) == 0 {
		t.Fatal("the browser never asked the view for the framed page")
	}
	for _, u := range fromView {
		if u != "/audit" {
			t.Errorf("the framed view loaded %s: the frame was not refused (requests: %v)", u, fromView)
		}
	}
}
