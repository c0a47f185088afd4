package view

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/promoral/promoral/internal/chrome"
)

// viewerWasm compiles the viewer to WebAssembly once per test process.
var viewerWasm struct {
	once       sync.Once
	wasm, exec []byte
	err        error
}

func buildWasm(t testing.TB) ([]byte, []byte) {
	t.Helper()
	viewerWasm.once.Do(func() { viewerWasm.wasm, viewerWasm.exec, viewerWasm.err = BuildViewerWasm() })
	if viewerWasm.err != nil {
		t.Fatal(viewerWasm.err)
	}
	return viewerWasm.wasm, viewerWasm.exec
}

// serveStatic serves dir with a plain file server on loopback: what a
// static host does.
func serveStatic(t testing.TB, dir string) string {
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// A bundle of two runs, served by a plain file server, in headless
// Chromium: the case list, a filter, a search that matches nothing, a
// case's transcript, the two runs compared and a pair side by side, and
// the audit queue saying it is read-only. No console error, no request
// beyond the file server.
func TestBundleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	ctx := chrome.Start(t, "promoral view --bundle", 1440, 1000, 8*time.Minute)
	if ctx == nil {
		return
	}
	runs := bundleRuns(t)
	wasm, exec := buildWasm(t)
	dir := filepath.Join(t.TempDir(), "site")
	if _, err := WriteBundle(dir, runs, wasm, exec, nil); err != nil {
		t.Fatal(err)
	}
	base := serveStatic(t, dir)
	problems, err := chrome.Watch(ctx, func(u string) bool {
		return strings.HasPrefix(u, base) || strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "blob:")
	})
	if err != nil {
		t.Fatal(err)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + ' | ' + document.body.innerText.slice(0, 300)`))
			t.Fatalf("%s: %v; the page: %s", what, err, state)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	waitFor := func(what, js string) {
		t.Helper()
		for k := 0; k < 400; k++ {
			if v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err == nil && v {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + ' | ' + document.body.innerText.slice(0, 300)`))
		t.Fatalf("waiting for %s: %s stayed false; the page: %s", what, js, state)
	}
	bigIs := func(n int) string {
		return fmt.Sprintf(`(document.querySelector('.summary .big')||{}).textContent === %q`, fmt.Sprintf("%d", n))
	}
	count := func(r *Run, kv ...string) int {
		t.Helper()
		q := Query{Sel: sel(kv[:len(kv)&^1]...)}
		if len(kv)%2 == 1 {
			q.Q = kv[len(kv)-1]
		}
		m, err := r.Find(q)
		if err != nil {
			t.Fatal(err)
		}
		return len(m.Cases)
	}

	// The list of every case, said to be a read-only copy.
	do("open the bundle", chromedp.Navigate(base), chromedp.WaitVisible("table.cases tbody tr"))
	waitFor("all cases", bigIs(runs[0].Len()))
	if rn := eval(`document.getElementById('runname').textContent`); !strings.Contains(rn, "read-only") {
		t.Errorf("the header does not say the bundle is read-only: %q", rn)
	}
	// A filter from the side panel; the route lives in the hash.
	do("filter wrong", chromedp.Click(`.facet[data-facet="outcome"] .fv[data-value="wrong"]`))
	waitFor("the wrong cases", bigIs(count(runs[0], "outcome", "wrong")))
	if h := eval(`location.hash`); h != "#/?outcome=wrong" {
		t.Errorf("the filter is not in the URL's hash: %q", h)
	}
	// A search that matches nothing: zero cases, no error.
	do("search for nothing", chromedp.KeyEvent("/"), chromedp.SendKeys("#q", "zzqxnothingmatches"+kb.Enter))
	waitFor("no case", bigIs(0))
	if e := eval(`String(document.querySelectorAll('.error-box').length)`); e != "0" {
		t.Errorf("the page shows an error: %s", eval(`document.querySelector('.error-box').textContent`))
	}
	do("search", chromedp.Navigate(base+"#/?q=birthday+decorations"), chromedp.WaitVisible("table.cases tbody tr"))
	waitFor("the search results", bigIs(count(runs[0], "birthday decorations")))

	// A case's transcript: every stage, the calls and the reply.
	var self int32 = -1
	m, _ := runs[0].Find(Query{Sel: sel("strategy", "self_correct", "task", "ethics")})
	if len(m.Cases) > 0 {
		self = m.Cases[0]
	}
	if self < 0 {
		t.Fatal("no self_correct case in the demo")
	}
	do("open a case", chromedp.Navigate(fmt.Sprintf("%s#/case/0/%d", base, self)), chromedp.WaitVisible("ol.steps li.step"))
	steps := eval(`[...document.querySelectorAll('ol.steps li.step .name')].map(n => n.textContent).join(' ')`)
	if !strings.Contains(steps, "critique") || !strings.Contains(eval(`document.querySelector('ol.steps').textContent`), "Final Answer") {
		t.Errorf("the case page's stages: %q, and no reply", steps)
	}

	// The two runs compared, a pair side by side.
	do("compare the runs", chromedp.Navigate(base+"#/compare?by=run"), chromedp.WaitVisible("table.cells tbody tr"))
	if n := eval(`String(document.querySelectorAll('table.cells tbody tr').length)`); n == "0" {
		t.Error("no cell compared")
	}
	do("compare strategies", chromedp.Navigate(base+"#/compare?by=strategy&a=zero_shot&b=self_correct&task=ethics"), chromedp.WaitVisible(".pairs .pair"))
	do("open a pair", chromedp.Click(".pairs .pair"), chromedp.WaitVisible(".sidebyside .turn"))

	// The audit queue shows cases but takes no label.
	do("audit", chromedp.Navigate(base+"#/audit"), chromedp.WaitVisible(".labelbox"))
	if note := eval(`document.querySelector('.labelbox').textContent`); !strings.Contains(note, "read-only") || eval(`String(document.querySelectorAll('.labelbox .choice').length)`) != "0" {
		t.Errorf("the audit queue of a bundle offers labels: %q", note)
	}
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		if d := os.Getenv("PROMORAL_VIEW_SCREENSHOTS"); d != "" {
			os.WriteFile(filepath.Join(d, "bundle-audit.png"), png, 0o644)
		}
	}
	for _, p := range problems.List() {
		t.Error(p)
	}
}

// BenchmarkBundleOpen times a bundle of a real run in headless Chromium:
//
//	go run ./cmd/promoral apply quickstart
//	PROMORAL_BUNDLE_RUN=out/quickstart go test ./view -run '^$' -bench BundleOpen -benchtime 5x
//
// load-ms: from the start of navigation to the list showing every case
// (the viewer fetched, compiled and the run's columns decoded); filter-ms:
// from a click on a filter to the list and counts redrawn; search-ms: the
// same for a search. Each load is a fresh page, cached files aside.
func BenchmarkBundleOpen(b *testing.B) {
	dir := os.Getenv("PROMORAL_BUNDLE_RUN")
	if dir == "" {
		b.Skip("set PROMORAL_BUNDLE_RUN to a run folder (out/quickstart)")
	}
	r, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	wasm, exec := buildWasm(b)
	site := filepath.Join(b.TempDir(), "site")
	start := time.Now()
	info, err := WriteBundle(site, []*Run{r}, wasm, exec, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("bundle of %d cases: %d files, %.1f MB (viewer %.1f MB before gzip), written in %s", r.Len(), info.Files, float64(info.Bytes)/1e6, float64(len(wasm))/1e6, time.Since(start).Round(time.Millisecond))
	m, _ := r.Find(Query{Sel: sel("outcome", "wrong")})
	wrong := len(m.Cases)
	ctx := chrome.Start(b, "promoral view --bundle", 1440, 1000, 10*time.Minute)
	if ctx == nil {
		return
	}
	base := serveStatic(b, site)
	until := func(cond string) string {
		return `new Promise(res => { const f = () => (` + cond + `) ? res(performance.now()) : setTimeout(f, 2); f(); })`
	}
	big := func(n int) string {
		return fmt.Sprintf(`((document.querySelector('.summary .big')||{}).textContent||'').replace(/,/g, '') === %q`, fmt.Sprint(n))
	}
	var load, filter, search time.Duration
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Navigate(base)); err != nil {
			b.Fatal(err)
		}
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](until(big(r.Len())+` && document.querySelector('table.cases tbody tr')`), chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatal(err)
		}
		load += time.Duration(ms * float64(time.Millisecond))
		js := `(async () => { const t0 = performance.now(); document.querySelector('.facet[data-facet="outcome"] .fv[data-value="wrong"]').click(); return await ` + until(big(wrong)) + ` - t0; })()`
		if ms, err = chromedp.Run(ctx, chromedp.Evaluate[float64](js, chromedp.EvalAwaitPromise)); err != nil {
			b.Fatal(err)
		}
		filter += time.Duration(ms * float64(time.Millisecond))
		js = `(async () => { const t0 = performance.now(); go('/?q=zzqxnothingmatches'); return await ` + until(big(0)) + ` - t0; })()`
		if ms, err = chromedp.Run(ctx, chromedp.Evaluate[float64](js, chromedp.EvalAwaitPromise)); err != nil {
			b.Fatal(err)
		}
		search += time.Duration(ms * float64(time.Millisecond))
	}
	n := float64(b.N)
	b.ReportMetric(float64(load.Milliseconds())/n, "load-ms")
	b.ReportMetric(float64(filter.Milliseconds())/n, "filter-ms")
	b.ReportMetric(float64(search.Milliseconds())/n, "search-ms")
	b.ReportMetric(float64(info.Bytes)/1e6, "bundle-MB")
}
