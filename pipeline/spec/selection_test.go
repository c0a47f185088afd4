package spec_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

func caseIDs(st *spec.Study) []string {
	var ids []string
	st.EachCase(func(c *spec.Case) bool {
		ids = append(ids, c.ID())
		return true
	})
	return ids
}

// Filters and --limit keep exactly the cells and items asked for, in the
// study's order.
func TestSelectPicksExactlyTheCells(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.ShardTree())
	cfg := filepath.Join(dir, "configs/run.yaml")
	for _, c := range []struct {
		name string
		sel  manifest.Selection
		want []string
	}{
		{"strategy and limit", manifest.Selection{Strategies: []string{"loop"}, Limit: 2},
			[]string{"bot/loop/toy/a", "bot/loop/toy/b"}},
		{"task", manifest.Selection{Tasks: []string{"safety"}},
			[]string{"bot/reply/safety/h1", "bot/reply/safety/b1", "bot/reply/safety/h2", "bot/reply/safety/b2"}},
		{"two strategies, one task, limit 1", manifest.Selection{Strategies: []string{"one_shot", "reply"}, Tasks: []string{"toy"}, Limit: 1},
			[]string{"bot/one_shot/toy/a"}},
		{"model, limit over the item count", manifest.Selection{Models: []string{"bot"}, Tasks: []string{"toy"}, Strategies: []string{"one_shot"}, Limit: 100},
			[]string{"bot/one_shot/toy/a", "bot/one_shot/toy/b", "bot/one_shot/toy/c", "bot/one_shot/toy/d", "bot/one_shot/toy/e", "bot/one_shot/toy/f"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := studytest.MustLoad(t, cfg)
			all := st.NumCases()
			if err := st.Select(c.sel); err != nil {
				t.Fatal(err)
			}
			if got := caseIDs(st); !slices.Equal(got, c.want) {
				t.Fatalf("selected %v\nwant     %v", got, c.want)
			}
			if st.Selection == nil || st.Selection.Cases != len(c.want) || st.Selection.CasesAll != all {
				t.Fatalf("selection %+v", st.Selection)
			}
		})
	}

	for _, c := range []struct {
		sel   manifest.Selection
		parts []string
	}{
		{manifest.Selection{Models: []string{"bto"}}, []string{"--model bto", "no such model", "bot"}},
		{manifest.Selection{Strategies: []string{"loops"}}, []string{"--strategy loops", "loop"}},
		{manifest.Selection{Tasks: []string{"toys"}}, []string{"--task toys", "toy"}},
		{manifest.Selection{Strategies: []string{"reply"}, Tasks: []string{"toy"}}, []string{"selects no cell"}},
		{manifest.Selection{Models: []string{"judge-bot"}}, []string{"only judges task safety"}},
		{manifest.Selection{Limit: -1}, []string{"--limit -1"}},
	} {
		studytest.WantErr(t, studytest.MustLoad(t, cfg).Select(c.sel), c.parts...)
	}
}
