package manifest

import (
	"fmt"
	"slices"
	"strings"
)

// Selection is the part of a study one apply ran (the manifest's
// selection): cells picked by model, strategy and task, at most Limit
// items per task, and one shard of what is left.
type Selection struct {
	Models     []string `json:"models,omitempty"`
	Strategies []string `json:"strategies,omitempty"`
	Tasks      []string `json:"tasks,omitempty"`
	// Limit keeps the first Limit items of each task, in dataset order.
	Limit int    `json:"limit,omitempty"`
	Shard *Shard `json:"shard,omitempty"`
	// Cases is what the selection keeps; CasesAll the whole study's cases.
	Cases    int `json:"cases"`
	CasesAll int `json:"cases_all"`
}

// Shard is share K (counted from 0) of N.
type Shard struct {
	K int `json:"k"`
	N int `json:"n"`
	// Key says what the share is cut on, for whoever reads a manifest.
	Key string `json:"key"`
}

// ShardKey is how a case is assigned to a shard: FNV-1a (64 bit) of the
// task name and the item id, modulo N. Every case of one item (every model,
// every strategy) lands in the same shard, so requests that cases of one item
// share (a first turn two strategies have in common, a judge reading equal
// replies) are made once, as in one process; and the share of a case moves
// only when its task or item does, never when models, strategies, metrics or
// other items are added or edited.
const ShardKey = "fnv1a64(task + NUL + item id) mod N"

func (sh *Shard) String() string { return fmt.Sprintf("%d/%d", sh.K, sh.N) }

// Partial reports whether the selection leaves out any case of the study.
func (sel *Selection) Partial() bool {
	return sel != nil && (sel.Cases < sel.CasesAll || sel.Filters())
}

// Filters reports whether the selection names a model, strategy, task,
// limit or shard.
func (sel *Selection) Filters() bool {
	return len(sel.Models)+len(sel.Strategies)+len(sel.Tasks) > 0 || sel.Limit > 0 || sel.Shard != nil
}

// Flags is the selection as the apply flags that make it.
func (sel *Selection) Flags() string {
	if sel == nil {
		return ""
	}
	var parts []string
	add := func(flag string, names []string) {
		if len(names) > 0 {
			parts = append(parts, flag+" "+strings.Join(names, ","))
		}
	}
	add("--model", sel.Models)
	add("--strategy", sel.Strategies)
	add("--task", sel.Tasks)
	if sel.Limit > 0 {
		parts = append(parts, fmt.Sprintf("--limit %d", sel.Limit))
	}
	if sel.Shard != nil {
		parts = append(parts, "--shard "+sel.Shard.String())
	}
	return strings.Join(parts, " ")
}

// Describe is one line for summaries, reports and metric rows: what was
// selected and how much of the study that is.
func (sel *Selection) Describe() string {
	if !sel.Partial() {
		return ""
	}
	return fmt.Sprintf("%s: %d of %d cases", sel.Flags(), sel.Cases, sel.CasesAll)
}

// Unsharded is the selection without its shard: what a merge of all its
// shards covers.
func (sel *Selection) Unsharded() Selection {
	out := Selection{Models: sel.Models, Strategies: sel.Strategies, Tasks: sel.Tasks, Limit: sel.Limit}
	return out
}

// SameCells reports whether two selections pick the same cells and items
// (shards aside).
func (sel *Selection) SameCells(o *Selection) bool {
	norm := func(s []string) []string {
		s = slices.Clone(s)
		slices.Sort(s)
		return slices.Compact(s)
	}
	return slices.Equal(norm(sel.Models), norm(o.Models)) && slices.Equal(norm(sel.Strategies), norm(o.Strategies)) &&
		slices.Equal(norm(sel.Tasks), norm(o.Tasks)) && sel.Limit == o.Limit
}
