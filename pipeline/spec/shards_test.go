package spec_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// A case's shard depends on its task and item only: adding a model or a
// strategy moves no item, and every case of an item is in one shard.
func TestShardIsStableUnderConfigEdits(t *testing.T) {
	files := studytest.ShardTree()
	dir := studytest.WriteTree(t, files)
	before := shardMap(t, filepath.Join(dir, "configs/run.yaml"), 3)
	files["configs/run.yaml"] = strings.Replace(files["configs/run.yaml"], "matrix: {models: [bot]}", "matrix: {models: [bot, bot2]}", 1)
	files["configs/run.yaml"] = strings.Replace(files["configs/run.yaml"], "  - name: judge-bot", "  - {name: bot2, provider: scripted, script: {replies: [{text: \"Answer: wrong\"}]}}\n  - name: judge-bot", 1)
	files["configs/tasks/toy.yaml"] += "\n"
	dir2 := studytest.WriteTree(t, files)
	after := shardMap(t, filepath.Join(dir2, "configs/run.yaml"), 3)
	if len(after) <= len(before) {
		t.Fatalf("the edit added no case: %d then %d", len(before), len(after))
	}
	byItem := map[string]int{}
	for id, k := range after {
		parts := strings.Split(id, "/")
		item := parts[2] + "/" + parts[3]
		if k0, ok := before[id]; ok && k0 != k {
			t.Errorf("case %s moved from shard %d to %d", id, k0, k)
		}
		if k0, ok := byItem[item]; ok && k0 != k {
			t.Errorf("item %s is in shards %d and %d", item, k0, k)
		}
		byItem[item] = k
	}
}

func shardMap(t *testing.T, cfg string, n int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for k := 0; k < n; k++ {
		st := studytest.MustLoad(t, cfg)
		if err := st.Select(manifest.Selection{Shard: &manifest.Shard{K: k, N: n}}); err != nil {
			t.Fatal(err)
		}
		st.EachCase(func(c *spec.Case) bool {
			if k0, dup := out[c.ID()]; dup {
				t.Errorf("case %s in shards %d and %d", c.ID(), k0, k)
			}
			out[c.ID()] = k
			return true
		})
	}
	all := studytest.MustLoad(t, cfg)
	if len(out) != all.NumCases() {
		t.Errorf("%d shards hold %d cases, the study %d", n, len(out), all.NumCases())
	}
	return out
}
