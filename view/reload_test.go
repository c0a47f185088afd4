package view

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run applied again while the view is open (re-scored: results.parquet
// replaced) is read again on the next request, without a restart; outputs
// that cannot be read keep the last good ones on the page, with the reason.
func TestViewReloadsARescoredRun(t *testing.T) {
	dir := copyRun(t, demoRun(t))
	base, _ := serve(t, dir)
	type meta struct {
		Runs []RunInfo `json:"runs"`
	}
	version := func(path string) string {
		t.Helper()
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.Header.Get("X-Promoral-Outputs")
	}
	var m0 meta
	getJSON(t, base+"/api/meta", &m0)
	var ethics0 CasesPage
	getJSON(t, base+"/api/cases?task=ethics&limit=1", &ethics0)
	if ethics0.Total != 80 {
		t.Fatalf("%d ethics cases in the demo, want 40 items × 2 strategies", ethics0.Total)
	}
	v0 := version("/api/meta")

	// Apply again with half the ETHICS items: the journal answers every
	// call, and the outputs are switched in anew.
	cfg := strings.Replace(demoYAML, "dataset: {limit: 40}", "dataset: {limit: 20}", 1)
	if cfg == demoYAML {
		t.Fatal("the demo config no longer limits ethics to 40 items")
	}
	// Requests while apply writes and switches in the new outputs get the
	// old run or the new one, never an error.
	stop := make(chan struct{})
	seen := make(chan string, 1)
	go func() {
		defer close(seen)
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := http.Get(base + "/api/cases?task=ethics&limit=1")
			if err != nil {
				seen <- err.Error()
				return
			}
			var p CasesPage
			err = json.NewDecoder(res.Body).Decode(&p)
			res.Body.Close()
			if res.StatusCode != 200 || err != nil || (p.Total != 80 && p.Total != 40) {
				seen <- fmt.Sprintf("status %d, %d ethics cases (%v)", res.StatusCode, p.Total, err)
				return
			}
		}
	}()
	err := applyConfig(t.TempDir(), cfg, dir)
	close(stop)
	if bad, ok := <-seen; ok {
		t.Errorf("a request during the re-score: %s", bad)
	}
	if err != nil {
		t.Fatal(err)
	}
	var m1 meta
	getJSON(t, base+"/api/meta", &m1)
	if got, want := m1.Runs[0].Cases, m0.Runs[0].Cases-40; got != want {
		t.Errorf("after the re-score the view serves %d cases, want %d", got, want)
	}
	var ethics1 CasesPage
	getJSON(t, base+"/api/cases?task=ethics&limit=1", &ethics1)
	if ethics1.Total != 40 {
		t.Errorf("%d ethics cases after the re-score, want 20 items × 2 strategies", ethics1.Total)
	}
	v1 := version("/api/meta")
	if v1 == v0 || v1 == "" {
		t.Errorf("the outputs version stayed %q after a reload: the page would not read the run again", v1)
	}
	var one Case
	if code := getJSON(t, base+"/api/case?i=0", &one); code != 200 || one.Row.ID == "" {
		t.Errorf("a case after the reload: %d %+v", code, one.Row)
	}
	if v := version("/api/meta"); v != v1 {
		t.Errorf("nothing changed, yet the run was read again (version %s -> %s)", v1, v)
	}

	// Outputs damaged on disk: the last good ones stay, and meta says why.
	if err := os.WriteFile(filepath.Join(dir, "results.parquet"), []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	var m2 meta
	getJSON(t, base+"/api/meta", &m2)
	if m2.Runs[0].Cases != m1.Runs[0].Cases || !strings.Contains(m2.Runs[0].ReloadError, "cannot be read again") {
		t.Errorf("damaged outputs: %d cases, reload error %q", m2.Runs[0].Cases, m2.Runs[0].ReloadError)
	}
}
