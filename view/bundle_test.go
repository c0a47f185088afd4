package view

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// bundleRuns are the demo run and a copy applied again with half the
// ETHICS items: two runs to compare.
func bundleRuns(t *testing.T) []*Run {
	t.Helper()
	a := copyRun(t, demoRun(t))
	b := copyRun(t, demoRun(t))
	cfg := strings.Replace(demoYAML, "dataset: {limit: 40}", "dataset: {limit: 20}", 1)
	if err := applyConfig(t.TempDir(), cfg, b); err != nil {
		t.Fatal(err)
	}
	var runs []*Run
	for _, d := range []string{a, b} {
		r, err := Open(d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		r.idx.wait()
		runs = append(runs, r)
	}
	return runs
}

// volatile are the fields of an answer that say when or how fast it was
// made, or where the run folder is: the bundle's differ by nature.
var volatile = map[string]bool{"took_ms": true, "opened_ms": true, "index_ms": true, "opened_at": true, "dir": true, "annotator": true, "report": true}

func scrub(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if volatile[k] {
				delete(x, k)
			} else {
				x[k] = scrub(x[k])
			}
		}
	case []any:
		for k := range x {
			x[k] = scrub(x[k])
		}
	}
	return v
}

// A bundle answers every request of the page as the server does: the same
// Go code answers them from what the bundle keeps of the runs. Labels
// cannot be given in it.
func TestBundleAnswersAsServer(t *testing.T) {
	runs := bundleRuns(t)
	live := NewServer(runs, "")
	dir := filepath.Join(t.TempDir(), "site")
	info, err := WriteBundle(dir, runs, []byte("\x00asm fake"), []byte("// wasm_exec"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Runs) != 2 || info.Runs[0].Cases != runs[0].Len() || info.Files < 10 {
		t.Fatalf("bundle info: %+v", info)
	}
	for _, f := range []string{"index.html", "assets/app.js", "assets/bundle.js", "assets/wasm_exec.js", "view.wasm.gz", "data/run0/run.gob.gz", "data/run1/cases/0.json.gz", bundleMarker} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the bundle lacks %s", f)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if strings.Contains(string(page), `"/assets/`) || !strings.Contains(string(page), `src="assets/bundle.js"`) {
		t.Errorf("index.html should load its files relative to itself, bundle.js among them:\n%s", page)
	}
	got := 0
	bundled, err := OpenBundle(func(name string) ([]byte, error) {
		got++
		return os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != 3 {
		t.Errorf("opening the bundle read %d files, want 3 (its contents and each run's columns; cases are read when asked)", got)
	}
	var some CasesPage
	getAnswer(t, live, "/api/cases?outcome=unparsed&limit=1", &some)
	if len(some.Rows) == 0 {
		t.Fatal("the demo has no unparsed case")
	}
	last := runs[0].Len() - 1
	reqs := []string{
		"/api/meta",
		"/api/cases",
		"/api/cases?outcome=wrong&model=gpt-4.1&sort=-tokens&limit=50",
		"/api/cases?q=birthday+decorations",
		"/api/cases?q=zzzqqxnothing",
		"/api/cases?model=no-such-model",
		"/api/cases?run=1&outcome=right&offset=5",
		"/api/cases?correct=unparsed%2C+scored+wrong&subset=x",
		fmt.Sprintf("/api/case?i=%d", some.Rows[0].I),
		fmt.Sprintf("/api/case?i=%d&nav=%s", last, url.QueryEscape("outcome=wrong")),
		"/api/case?run=1&i=3",
		"/api/case?i=999999",
		"/api/unparsed",
		"/api/unparsed?model=gpt-4.1",
		"/api/compare?by=strategy&a=zero_shot&b=self_correct&task=ethics",
		"/api/compare?by=run",
		"/api/compare?by=run&only=flips",
		"/api/pair?a=0&b=1&run_b=1",
		"/api/cases?limit=0",
	}
	for _, q := range reqs {
		ls, lt, lb := Answer(live, "GET", q, nil)
		bs, bt, bb := Answer(bundled, "GET", q, nil)
		if ls != bs || lt != bt {
			t.Errorf("%s: the server answers %d %s, the bundle %d %s: %s", q, ls, lt, bs, bt, bb)
			continue
		}
		var lv, bv any
		if json.Unmarshal(lb, &lv) != nil || json.Unmarshal(bb, &bv) != nil {
			t.Errorf("%s: not JSON: %.200s / %.200s", q, lb, bb)
			continue
		}
		if !reflect.DeepEqual(scrub(lv), scrub(bv)) {
			t.Errorf("%s: the bundle answers otherwise than the server:\n server %.600s\n bundle %.600s", q, lb, bb)
		}
	}
	st, _, body := Answer(bundled, "POST", "/api/label", []byte(`{"run":0,"i":0,"label":"x","annotator":"a"}`))
	if st != http.StatusForbidden || !strings.Contains(string(body), "read-only") {
		t.Errorf("a label in a bundle: %d %s; want 403, read-only", st, body)
	}
}

func getAnswer(t *testing.T, h http.Handler, q string, v any) {
	t.Helper()
	st, _, body := Answer(h, "GET", q, nil)
	if st != 200 {
		t.Fatalf("%s: %d %s", q, st, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatal(err)
	}
}

// A folder that holds something else is not overwritten.
func TestBundleRefusesAFolderInUse(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("x"), 0o644)
	err := prepareBundleDir(dir)
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "thesis.tex")); err != nil {
		t.Fatal("the folder's file was removed")
	}
}
