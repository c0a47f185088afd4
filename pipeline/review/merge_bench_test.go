package review_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/runfolder/manifest"
)

// BenchmarkMerge measures promoral merge alone: 4 shards of a scripted
// study of 3,000 items under the one-shot and the looping strategy (6,000
// cases, 10,500 calls) are applied once, then merged b.N times.
//
//	go test ./pipeline/review -run '^$' -bench Merge -benchtime 3x
func BenchmarkMerge(b *testing.B) {
	var items strings.Builder
	for i := range 3000 {
		verb := []string{"stole a bike", "fed the cat", "hit my brother", "read a book"}[i%4]
		fmt.Fprintf(&items, "{\"id\":\"x%05d\",\"text\":\"Day %d: I %s.\",\"gold\":\"%d\"}\n", i, i, verb, (i+1)%2)
	}
	dir := studytest.WriteTree(b, studytest.BaseTree(map[string]string{"data/items.jsonl": items.String()}))
	cfg := filepath.Join(dir, "configs/run.yaml")
	os.WriteFile(cfg, []byte(studytest.BaseTree(nil)["configs/run.yaml"]+"metrics: [{kind: classification, bootstrap: 200}]\n"), 0o644)
	const n = 4
	var dirs []string
	for k := range n {
		st := studytest.MustLoad(b, cfg)
		if err := st.Select(manifest.Selection{Shard: &manifest.Shard{K: k, N: n}}); err != nil {
			b.Fatal(err)
		}
		d := filepath.Join(dir, fmt.Sprintf("shard-%d", k))
		studytest.Apply(b, st, d)
		dirs = append(dirs, d)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		sum, err := review.Merge(studytest.MustLoad(b, cfg), filepath.Join(dir, fmt.Sprintf("merged-%d", i)), dirs, nil)
		if err != nil || sum.Cases != 6000 {
			b.Fatalf("%v %v", err, sum)
		}
		b.ReportMetric(float64(sum.CallsNew), "calls")
	}
}
