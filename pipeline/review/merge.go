package review

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/promoral/promoral/pipeline/audit"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// ShardManifest reads the manifest of a shard folder's finished outputs.
func ShardManifest(dir string) (*manifest.Manifest, error) {
	path := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if _, jerr := os.Stat(filepath.Join(dir, "journal.jsonl")); jerr == nil {
			return nil, fmt.Errorf("%s has a journal but no finished outputs (no manifest.json): its apply stopped before the end; run the same `promoral apply CONFIG --shard k/N --out %s` again (it resumes from the journal), then merge", dir, dir)
		}
		return nil, fmt.Errorf("%s is not a run folder (no manifest.json, no journal.jsonl): name the folders `apply --shard` wrote", dir)
	}
	if err != nil {
		return nil, err
	}
	var m manifest.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &m, nil
}

type shardIn struct {
	dir string
	m   *manifest.Manifest
}

// Merge joins the run folders of the shards of one study into out, a new
// folder: they must come from the same config files (config_hash), select
// the same cells, and hold every shard k/N exactly once, each finished. The
// results are the shards' rows, in the study's case order; calls.parquet is
// the shards' calls; the journal is the union of theirs, so `apply` on out
// resumes and every reader works on it; the metrics are computed afresh on
// the joined results, exactly as one process computes them. st is the
// study loaded from the shards' config; Merge narrows it to the shards'
// cells itself.
func Merge(st *spec.Study, out string, dirs []string, log io.Writer) (*engine.Summary, error) {
	if log == nil {
		log = io.Discard
	}
	if len(dirs) == 0 {
		return nil, errors.New("merge: name the shard folders to join")
	}
	shards, err := checkShards(st, dirs)
	if err != nil {
		return nil, err
	}
	if err := freshFolder(out); err != nil {
		return nil, err
	}
	if st.Selection == nil {
		if err := st.Select(shards[0].m.Selection.Unsharded()); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	results, err := joinResults(st, shards)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o777); err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", out, err)
	}
	jpath := filepath.Join(out, "journal.jsonl")
	if err := joinJournals(jpath, shards); err != nil {
		return nil, err
	}
	if err := joinLabels(filepath.Join(out, audit.LabelsFile), shards); err != nil {
		return nil, err
	}
	j, err := journal.OpenReadOnly(jpath)
	if err != nil {
		return nil, err
	}
	defer j.Close()

	set, err := engine.OpenOutputSet(st, out, j, scoring.New(), log)
	if err != nil {
		return nil, err
	}
	started := shards[0].m.Started
	for _, sh := range shards {
		if sh.m.Started.Before(started) {
			started = sh.m.Started
		}
		for model, versions := range sh.m.ModelVersions {
			for _, v := range versions {
				set.NoteVersion(model, v)
			}
		}
	}
	for _, sh := range shards {
		if err := set.AppendCalls(filepath.Join(sh.dir, "calls.parquet")); err != nil {
			set.Abort()
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	// What was sent and served is what the shards did, since the rows
	// alone do not say which calls a case found cached.
	merged := &engine.MergeTotals{}
	for _, sh := range shards {
		m := sh.m
		merged.CallsNew += m.CallsNew
		merged.CallsCached += m.CallsCached
		merged.Attempts += m.Attempts
		merged.CallsShared += m.CallsShared
		if merged.SharedCache == "" {
			merged.SharedCache = m.SharedCache
		} else if m.SharedCache != "" && m.SharedCache != merged.SharedCache {
			merged.SharedCache = "(several folders: see merged_from)"
		}
		merged.Shards = append(merged.Shards, manifest.MergedShard{Dir: sh.dir, Shard: m.Selection.Shard.String(),
			Generation: filepath.Base(engine.CurrentGeneration(sh.dir)), Cases: m.Cases, Errors: m.Errors, Kept: m.Kept,
			CallsNew: m.CallsNew, CallsShared: m.CallsShared, SharedCache: m.SharedCache, CostUSD: m.CostUSD, Started: m.Started, Finished: m.Finished})
	}
	st.EachCase(func(c *spec.Case) bool {
		set.Put(c, results[c.Ordinal])
		return true
	})
	return set.Commit(started, merged)
}

// checkShards reads the shards' manifests and refuses a set that is not
// one whole study: another config, other cells, a shard twice, a shard
// missing.
func checkShards(st *spec.Study, dirs []string) ([]shardIn, error) {
	var shards []shardIn
	for _, d := range dirs {
		m, err := ShardManifest(d)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if m.Selection == nil || m.Selection.Shard == nil {
			what := "the whole study"
			if m.Selection.Partial() {
				what = "a selection without --shard (" + m.Selection.Describe() + ")"
			}
			return nil, fmt.Errorf("merge: %s is not a shard: its outputs cover %s; merge joins folders written by `apply --shard k/N`", d, what)
		}
		shards = append(shards, shardIn{d, m})
	}
	first := shards[0]
	for _, sh := range shards {
		if sh.m.ConfigHash != st.ConfigHash {
			return nil, fmt.Errorf("merge: %s comes from another config than %s (config_hash %.12s, not %.12s): shards must be applied from the same config, strategy, task and template files (names and contents; paths may differ)",
				sh.dir, st.File, sh.m.ConfigHash, st.ConfigHash)
		}
		if sh.m.Selection.Shard.N != first.m.Selection.Shard.N {
			return nil, fmt.Errorf("merge: %s is shard %s but %s is shard %s: every shard of a merge cuts the study into the same N", sh.dir, sh.m.Selection.Shard, first.dir, first.m.Selection.Shard)
		}
		if !sh.m.Selection.SameCells(first.m.Selection) {
			return nil, fmt.Errorf("merge: %s selected %q but %s selected %q: the shards of a merge must be applied with the same --model, --strategy, --task and --limit",
				sh.dir, unshardedFlags(sh.m.Selection), first.dir, unshardedFlags(first.m.Selection))
		}
		if sh.m.Interrupted || sh.m.Capped != nil {
			return nil, fmt.Errorf("merge: %s did not finish (its manifest says it stopped early): apply it again, then merge", sh.dir)
		}
	}
	n := first.m.Selection.Shard.N
	byK := map[int]string{}
	for _, sh := range shards {
		k := sh.m.Selection.Shard.K
		if other, ok := byK[k]; ok {
			return nil, fmt.Errorf("merge: %s and %s are both shard %d/%d: the shards overlap; name each shard's folder once", other, sh.dir, k, n)
		}
		byK[k] = sh.dir
	}
	var missing []string
	for k := 0; k < n; k++ {
		if _, ok := byK[k]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", k, n))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: shard %s missing: %d of %d given; apply the config with --shard %s, then merge all %d folders",
			strings.Join(missing, ", "), len(shards), n, missing[0], n)
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].m.Selection.Shard.K < shards[j].m.Selection.Shard.K })
	return shards, nil
}

func unshardedFlags(sel *manifest.Selection) string {
	u := sel.Unsharded()
	if f := u.Flags(); f != "" {
		return f
	}
	return "no filter"
}

// freshFolder refuses an output folder that holds anything: a merge never
// overwrites.
func freshFolder(out string) error {
	entries, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("merge: %s already holds files: merge writes into a new (or empty) folder, so nothing is overwritten; name another", out)
	}
	return nil
}

// joinResults reads every shard's results.parquet into the merged study's
// case order, checking that each case is in exactly one shard.
func joinResults(st *spec.Study, shards []shardIn) ([]spec.Result, error) {
	ord := map[string]int{}
	st.EachCase(func(c *spec.Case) bool {
		ord[c.ID()] = c.Ordinal
		return true
	})
	results := make([]spec.Result, len(ord))
	from := make([]string, len(ord))
	for _, sh := range shards {
		path := filepath.Join(sh.dir, "results.parquet")
		var bad error
		err := parquetio.Scan(path, nil, nil, func(row map[string]any) {
			if bad != nil {
				return
			}
			id, _ := row["case_id"].(string)
			i, ok := ord[id]
			switch {
			case !ok:
				bad = fmt.Errorf("merge: %s holds case %s, which the config does not have (or the selection leaves out)", path, id)
			case from[i] != "":
				bad = fmt.Errorf("merge: case %s is in both %s and %s: the shards overlap", id, from[i], sh.dir)
			case row["config_hash"] != st.ConfigHash:
				bad = fmt.Errorf("merge: %s: case %s was computed from another config (config_hash %v)", path, id, row["config_hash"])
			default:
				from[i] = sh.dir
				results[i] = engine.RowResult(row)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if bad != nil {
			return nil, bad
		}
	}
	var missing []string
	st.EachCase(func(c *spec.Case) bool {
		if from[c.Ordinal] == "" {
			missing = append(missing, c.ID())
		}
		return true
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: %s in no shard, e.g. %s: the shards do not cover the study (were they applied with the same data?)",
			spec.Plural(len(missing), "case is", "cases are"), missing[0])
	}
	return results, nil
}

// joinJournals writes the union of the shards' journals: every complete
// line of each (a torn last line, which the shard's own apply would have
// cut off, is left out).
func joinJournals(path string, shards []shardIn) error {
	tmp := path + ".merging"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, sh := range shards {
		if err := appendLines(w, filepath.Join(sh.dir, "journal.jsonl")); err != nil {
			f.Close()
			os.Remove(tmp)
			return fmt.Errorf("merge: %w", err)
		}
	}
	if err := w.Flush(); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// joinLabels carries the shards' audit labels over: each label names its
// case, and the shards' cases are disjoint, so their union is every label.
func joinLabels(path string, shards []shardIn) error {
	var have []shardIn
	for _, sh := range shards {
		if _, err := os.Stat(filepath.Join(sh.dir, audit.LabelsFile)); err == nil {
			have = append(have, sh)
		}
	}
	if len(have) == 0 {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, sh := range have {
		if err := appendLines(w, filepath.Join(sh.dir, audit.LabelsFile)); err != nil {
			f.Close()
			return fmt.Errorf("merge: %w", err)
		}
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func appendLines(w *bufio.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return nil // a last line without its newline is torn
		}
		if err != nil {
			return err
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
}
