package spec

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/promoral/promoral/pipeline/yamlstrict"
	"github.com/promoral/promoral/runfolder/manifest"
)

// ParseShard reads k/N (0 <= k < N).
func ParseShard(s string) (*manifest.Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return nil, fmt.Errorf("--shard %q: write it as k/N, e.g. 0/4 for the first of four shards", s)
	case n < 1:
		return nil, fmt.Errorf("--shard %q: N must be at least 1", s)
	case k < 0 || k >= n:
		return nil, fmt.Errorf("--shard %q: k counts from 0 to N-1 (0/%d … %d/%d); a Slurm array --array=0-%d or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX gives it", s, n, n-1, n, n-1)
	}
	return &manifest.Shard{K: k, N: n, Key: manifest.ShardKey}, nil
}

// shardOf is the shard (of n) that the cases of an item belong to.
func shardOf(task, item string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(task))
	h.Write([]byte{0})
	h.Write([]byte(item))
	return int(h.Sum64() % uint64(n))
}

// Select narrows the study to a selection, in place: the matrix keeps the
// cells of the named models, strategies and tasks (all where none is
// named), each task keeps its first Limit items, then the items of the
// shard. The engine, plan, metrics and outputs then see only the selected
// cases, numbered from 0. A name the study does not have is an error with
// the near miss; so is a filter that leaves no cell. An empty shard is not
// an error: a small study cut in many shards has some.
func (s *Study) Select(sel manifest.Selection) error {
	sel.CasesAll = s.NumCases()
	check := func(flag string, names []string, known []string) error {
		for _, n := range names {
			if !slices.Contains(known, n) {
				return fmt.Errorf("%s %s: the study has no such %s; %s", flag, n, strings.TrimPrefix(flag, "--"),
					yamlstrict.NameHint(n, known, ""))
			}
		}
		return nil
	}
	if err := check("--model", sel.Models, s.ModelNames()); err != nil {
		return err
	}
	if err := check("--strategy", sel.Strategies, s.StrategyNames()); err != nil {
		return err
	}
	if err := check("--task", sel.Tasks, s.TaskNames()); err != nil {
		return err
	}
	if sel.Limit < 0 {
		return fmt.Errorf("--limit %d: give a number of items per task, at least 1", sel.Limit)
	}
	keep := func(names []string, n string) bool { return len(names) == 0 || slices.Contains(names, n) }
	var cells []ResolvedCell
	for _, c := range s.Cells {
		if keep(sel.Models, c.Model.Name) && keep(sel.Strategies, c.Strategy.Name) && keep(sel.Tasks, c.Task.Name) {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 && len(s.Cells) > 0 {
		return fmt.Errorf("%s selects no cell of the matrix%s", sel.Flags(), s.whyNoCell(sel))
	}
	s.Cells = cells
	for _, t := range s.Tasks {
		items := t.Items
		if sel.Limit > 0 && len(items) > sel.Limit {
			items = items[:sel.Limit]
		}
		var keep []int // the places of the items kept, under a shard
		if sh := sel.Shard; sh != nil {
			var mine []Item
			for i, it := range items {
				if shardOf(t.Name, it.ID, sh.N) == sh.K {
					mine = append(mine, it)
					keep = append(keep, i)
				}
			}
			items = mine
		}
		if len(items) != len(t.Items) {
			if keep == nil {
				keep = make([]int, len(items))
				for i := range keep {
					keep[i] = i
				}
			}
			t.narrowItemFactors(keep)
			// A fresh slice: items of other studies loaded from the same
			// task are never shared, but the shapes cached for dry runs
			// and plans point into the old one.
			t.Items = slices.Clip(slices.Clone(items))
			t.resetShapes()
		}
	}
	sel.Cases = s.NumCases()
	if sel.Filters() {
		s.Selection = &sel
	}
	return nil
}

// whyNoCell explains an empty selection: a judge model named as a model,
// or names that never meet in one cell.
func (s *Study) whyNoCell(sel manifest.Selection) string {
	for _, m := range sel.Models {
		for _, c := range s.Cells {
			if j := c.Task.Judge; j != nil && j.Model != nil && j.Model.Name == m {
				return fmt.Sprintf(" (model %s only judges task %s; its calls come with the cases it judges: select those)", m, c.Task.Name)
			}
		}
	}
	return "; `promoral plan` without the filters lists the cells"
}

func (t *Task) resetShapes() {
	t.shapeOnce = sync.Once{}
	t.shapeList = nil
}

// ShardDir is a shard's default run folder, beside the study's: its own
// journal, so shards on one shared disk never contend for a lock.
func ShardDir(out string, sh *manifest.Shard) string {
	return fmt.Sprintf("%s-shard-%d-of-%d", filepath.Clean(out), sh.K, sh.N)
}

// CalledModels are the models the study's cells call, judges included, in
// the study's order.
func (s *Study) CalledModels() []*Model {
	used := map[*Model]bool{}
	for _, c := range s.Cells {
		used[c.Model] = true
		if j := c.Task.Judge; j != nil && j.Model != nil {
			used[j.Model] = true
		}
	}
	var out []*Model
	for _, m := range s.Models {
		if used[m] {
			out = append(out, m)
		}
	}
	return out
}
