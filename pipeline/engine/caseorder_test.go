package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/fake"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// sameStudyTree is a study of three models (two on a loopback OpenAI
// server, one scripted that fails on some items), a one-shot and a looping
// strategy, with repeats and concurrency, over n items.
func sameStudyTree(baseURL string, n int) map[string]string {
	var items strings.Builder
	acts := []string{"I stole a bike", "I fed the cat", "I lied to my boss", "I watered the plants", "I hit my brother"}
	for i := range n {
		gold := "0"
		if i%5 == 0 || i%5 == 2 || i%5 == 4 {
			gold = "1"
		}
		fmt.Fprintf(&items, `{"id":"i%03d","text":"%s, time %d.","gold":"%s"}`+"\n", i, acts[i%5], i, gold)
	}
	return studytest.BaseTree(map[string]string{
		"data/items.jsonl": items.String(),
		"configs/run.yaml": fmt.Sprintf(`name: same-run
models:
  - {name: first, provider: openai, model: gpt-4.1, base_url: %[1]s, key_env: PROMORAL_TEST_KEY_SAME}
  - {name: second, provider: openai, model: gpt-4.1-mini, base_url: %[1]s, key_env: PROMORAL_TEST_KEY_SAME}
  - name: third
    provider: scripted
    script:
      replies:
        - {match: "time 7", status: 400}
        - {match: "time 4", status: 400}
        - text: "Confidence: 0.7\nAnswer: {{if find \"(stole|lied|hit)\" .last}}wrong{{else}}not wrong{{end}}"
tasks: [toy]
strategies: [one_shot, loop]
settings: {concurrency: 4, repeats: 2}
metrics:
  - {kind: classification, bootstrap: 0}
`, baseURL),
	})
}

// hashReply answers by a hash of the whole conversation: the same request
// always gets the same reply, and a third of them do not parse.
func hashReply(c fake.Call) []string {
	h := fnv.New64a()
	h.Write([]byte(c.Model + "\n" + c.All()))
	v := h.Sum64()
	switch v % 3 {
	case 0:
		return []string{fmt.Sprintf("Confidence: 0.%d\nAnswer: wrong", 5+v/3%5)}
	case 1:
		return []string{fmt.Sprintf("Confidence: 0.%d\nAnswer: not wrong", 5+v/3%5)}
	}
	return []string{"I would rather not say."}
}

// applySame applies the study cfg in a fresh folder and returns the
// folder.
func applySame(t *testing.T, cfg string) string {
	t.Helper()
	// A response cache of its own: an apply must make its calls, not take
	// the earlier apply's replies.
	t.Setenv("PROMORAL_CACHE_DIR", t.TempDir())
	st := studytest.MustLoad(t, cfg)
	if err := engine.Connect(st, false); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	sum, _, err := engine.NewEngine(st, engine.Options{OutDir: out, NoResults: true, Doer: engine.TransportsShared(engine.RateOptions{Concurrency: 4}), Scorer: scoring.New()}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors == 0 || sum.Cases != sum.CasesPlanned {
		t.Fatalf("the study should finish every case with some errors: %d cases of %d, %d errors", sum.Cases, sum.CasesPlanned, sum.Errors)
	}
	return out
}

// TestSameStudySameFiles applies one study twice against a deterministic
// server, once with the first model slow and once with the second, so the
// cases finish in different orders: results.parquet is the same bytes,
// and calls.parquet the same rows in the same order apart from when the
// calls were made and how long they took. The third apply holds at most
// eight cases' rows in memory, so the rows go through the spill file.
func TestSameStudySameFiles(t *testing.T) {
	t.Setenv("PROMORAL_TEST_KEY_SAME", "k")
	// The model named slow answers each call after a pause, so that its
	// cases finish last.
	var slow atomic.Value
	srv := fake.New("openai", func(c fake.Call) []string {
		if c.Model == slow.Load() {
			time.Sleep(time.Millisecond)
		}
		return hashReply(c)
	})
	defer srv.Close()
	const n = 100 // 3 models × 2 strategies × 2 repeats × 100 items = 1,200 cases
	cfg := filepath.Join(studytest.WriteTree(t, sameStudyTree(srv.BaseURL(), n)), "configs/run.yaml")
	slow.Store("gpt-4.1")
	a := applySame(t, cfg)
	slow.Store("gpt-4.1-mini")
	b := applySame(t, cfg)
	restore := engine.SpoolBound(8, 1<<12)
	slow.Store("gpt-4.1")
	c := applySame(t, cfg)
	restore()
	for _, other := range []string{b, c} {
		ra, _ := os.ReadFile(filepath.Join(a, "results.parquet"))
		rb, _ := os.ReadFile(filepath.Join(other, "results.parquet"))
		if len(ra) == 0 || !bytes.Equal(ra, rb) {
			t.Errorf("results.parquet differs between two applies of one study (%d and %d bytes)", len(ra), len(rb))
			diffRows(t, filepath.Join(a, "results.parquet"), filepath.Join(other, "results.parquet"))
		}
		diffRows(t, filepath.Join(a, "calls.parquet"), filepath.Join(other, "calls.parquet"), "time", "latency_ms")
	}
	// The rows are in the study's case order, errored cases in their
	// place, and so are the calls.
	var ids []string
	studytest.MustLoad(t, cfg).EachCase(func(c *spec.Case) bool {
		ids = append(ids, c.ID())
		return true
	})
	rows := studytest.ReadRows(t, filepath.Join(a, "results.parquet"))
	if len(rows) != len(ids) || len(ids) != 1200 {
		t.Fatalf("results.parquet has %d rows for %d cases, want 1200", len(rows), len(ids))
	}
	for i, r := range rows {
		if r["case_id"] != ids[i] {
			t.Fatalf("results.parquet row %d is case %v, case %d is %s: not in case order", i, r["case_id"], i, ids[i])
		}
	}
	k := 0
	for i, r := range studytest.ReadRows(t, filepath.Join(a, "calls.parquet")) {
		for k < len(ids) && r["case_id"] != ids[k] {
			k++
		}
		if k == len(ids) {
			t.Fatalf("calls.parquet row %d (case %v) is out of case order", i, r["case_id"])
		}
	}
}

// diffRows fails the test at the first row the two files differ in, the
// columns drop left out.
func diffRows(t *testing.T, pa, pb string, drop ...string) {
	t.Helper()
	ra, rb := studytest.ReadRows(t, pa), studytest.ReadRows(t, pb)
	if len(ra) != len(rb) {
		t.Errorf("%s: %d rows, %s: %d", pa, len(ra), pb, len(rb))
		return
	}
	for i := range ra {
		for _, d := range drop {
			delete(ra[i], d)
			delete(rb[i], d)
		}
		if fa, fb := fmt.Sprint(ra[i]), fmt.Sprint(rb[i]); fa != fb {
			t.Errorf("%s row %d differs between two applies:\n%s\n%s", filepath.Base(pa), i, fa, fb)
			return
		}
	}
}
