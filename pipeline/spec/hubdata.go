package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/yamlstrict"
	"github.com/promoral/promoral/runfolder/manifest"
)

// TaskData is where a task's items came from.
type TaskData struct {
	// Hub is the task's hub reference (nil for a local file).
	Hub *dataset.Hub
	// Entry is the lock's entry for it, when the data is cached.
	Entry *dataset.LockEntry
	// Files are the local files read (the cache's verified copies for a
	// hub reference); none while Pending.
	Files []string
	// Pending: the hub data is not in the cache, so the task's items are
	// stand-ins, Hub.Rows of them (none when it declares no rows), with
	// placeholder text: enough for validate and plan, never run.
	Pending bool
	// NotCached says how to fetch it, while Pending.
	NotCached error
}

// PendingData lists the tasks of the study's cells whose hub data is not
// fetched yet.
func (s *Study) PendingData() []*Task {
	var out []*Task
	seen := map[*Task]bool{}
	for _, c := range s.Cells {
		if t := c.Task; !seen[t] && t.Data != nil && t.Data.Pending {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// hubData is the loader's view of the dataset cache and lock (through the
// registered dataset.HubSource).
func (l *loader) hubData(o LoadOptions) (dataset.HubSource, error) {
	if l.data != nil {
		return l.data, nil
	}
	upd := map[string]bool{}
	for _, n := range o.Update {
		upd[n] = true
	}
	d, err := dataset.OpenHub(dataset.HubOptions{RunFile: l.runFile, Fetch: o.Fetch, Update: upd, Progress: o.Progress, Ctx: o.Ctx})
	if err != nil {
		return nil, err
	}
	l.data = d
	return d, nil
}

// resolveData finds the local files of a task's hub reference before the
// task compiles: cached (verified against the lock), fetched (with
// o.Fetch), or pending (stand-in items for validate and plan).
func (l *loader) resolveData(spec *TaskSpec, o LoadOptions, allowFixtures bool, line int, field string) *TaskData {
	h := spec.Dataset.Hub
	if h == nil {
		if spec.Dataset.Path == "" {
			return nil
		}
		return &TaskData{Files: []string{spec.Dataset.Resolve(filepath.Dir(spec.File))}}
	}
	td := &TaskData{Hub: h}
	if spec.Dataset.Path != "" || len(spec.Dataset.Check()) > 0 {
		return td // compileTask reports the spec's problems
	}
	if h.Fixture != "" && allowFixtures {
		p := h.Fixture
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(spec.File), p)
		}
		td.Files, spec.Dataset.Files = []string{p}, []string{p}
		spec.Fixture = "reads dataset.hub.fixture, invented data, instead of " + h.ID + " (settings.allow_fixtures)"
		return td
	}
	d, err := l.hubData(o)
	if errors.Is(err, dataset.ErrNoHub) {
		l.ds.Addf(l.runFile, line, field, "import github.com/promoral/promoral/pipeline/hub in the program that loads the study, as cmd/promoral and internal/studytest do",
			"task %s reads dataset.hub %s: %v", spec.Name, h.ID, err)
		td.Pending = true
		return td
	}
	if err != nil {
		l.ds.Addf(l.runFile, 0, "", "fix or delete the lock file", "%v", err)
		return td
	}
	files, err := d.Files(spec.Name, h)
	var un *dataset.Unreachable
	switch {
	case errors.As(err, &un) && o.unreached != nil:
		o.unreached.add(DownloadFailure{Task: spec.Name, Ref: un.Ref, Endpoint: un.Endpoint, Cause: un.Cause, File: l.runFile, Line: line, Field: field}, d.OfflineHint())
		td.Pending = true
	case err == nil:
		td.Files, td.Entry = files, d.Entry(spec.Name, h)
		spec.Dataset.Files = files
	case errors.Is(err, dataset.ErrNotCached) && !o.NeedData:
		td.Pending, td.NotCached = true, err
	default:
		l.ds.Addf(l.runFile, line, field, "", "%v", err)
		td.Pending = true
	}
	return td
}

// itemField finds the item fields a template reads.
var itemField = regexp.MustCompile(`\.item\.([A-Za-z_][A-Za-z0-9_]*)`)

// standIns gives a task whose hub data is not fetched its declared number
// of items, each with every field the task's blocks read set to
// placeholder text: as long, together, as the declared bytes per row, so
// plan's token counts are of the right order. They share one map and are
// never run.
func standIns(spec *TaskSpec, t *Task) {
	h := spec.Dataset.Hub
	if h.Rows <= 0 {
		return
	}
	names := map[string]bool{}
	for _, b := range spec.Blocks {
		for _, m := range itemField.FindAllStringSubmatch(b, -1) {
			names[m[1]] = true
		}
	}
	for k := range spec.Dataset.Fields {
		names[k] = true
	}
	for _, k := range spec.Keep {
		names[k] = true
	}
	delete(names, spec.Gold)
	per := 0
	if h.Bytes > 0 && len(names) > 0 {
		per = int(h.Bytes / int64(h.Rows) / int64(len(names)))
	}
	fields := map[string]any{}
	for k := range names {
		fields[k] = placeholder(per)
	}
	if spec.Gold != "" {
		fields[spec.Gold] = nil // present, unknown until fetched
	}
	t.Items = make([]Item, h.Rows)
	for i := range t.Items {
		t.Items[i] = Item{ID: fmt.Sprintf("%s:%d", spec.Name, i+1), Row: i + 1, Fields: fields}
	}
}

func placeholder(n int) string {
	const words = "not fetched yet "
	if n <= len("(not fetched)") {
		return "(not fetched)"
	}
	return strings.Repeat(words, n/len(words)+1)[:n]
}

// checkMatch compares a task's items with the shipped index its dataset
// names (dataset.match): same count, and each index row's item starts with
// the index's prefix.
func checkMatch(spec *TaskSpec, t *Task, ds *yamlstrict.Diags, line int, field string) {
	m := spec.Dataset.Match
	if m == nil || t.Data == nil || t.Data.Pending || t.Fixture || len(t.Items) == 0 {
		return
	}
	base := filepath.Dir(spec.File)
	idx, err := dataset.Load(&dataset.Spec{Path: m.Path}, base)
	if err != nil {
		ds.Addf(spec.File, line, field, "fix dataset.match.path", "%v", err)
		return
	}
	what := spec.Dataset.Path
	if h := spec.Dataset.Hub; h != nil {
		what = h.Name()
	}
	fail := func(format string, args ...any) {
		ds.Addf(spec.File, line, field, "the data is not the one the index describes: check dataset.hub (id, split, revision) or the file, and the task's filter and limit",
			"task %s: %s does not match the index %s: %s", spec.Name, what, m.Path, fmt.Sprintf(format, args...))
	}
	if len(idx) != len(t.Items) {
		fail("it has %d items, the index %d", len(t.Items), len(idx))
		return
	}
	byID := map[string]int{}
	if m.ID != "" {
		for i := range t.Items {
			byID[t.Items[i].ID] = i
		}
	}
	bad, first := 0, ""
	for _, r := range idx {
		if v, has := r.Fields["id"]; has {
			r.ID = fmt.Sprint(v)
		}
		var at int
		ok := true
		if m.ID != "" {
			at, ok = byID[fmt.Sprint(r.Fields[m.ID])]
		} else {
			n, err := strconv.Atoi(fmt.Sprint(r.Fields[m.Row]))
			at, ok = n, err == nil && n >= 0 && n < len(t.Items)
		}

		if !ok {
			bad++
			if first == "" {
				first = fmt.Sprintf("index row %s names no item", r.ID)
			}
			continue
		}
		if m.Field == "" {
			continue
		}
		text := fmt.Sprint(t.Items[at].Values()[m.Field])
		prefix := fmt.Sprint(r.Fields[m.Prefix])
		prefix = strings.TrimSuffix(prefix, "...")
		if !strings.HasPrefix(text, prefix) {
			bad++
			if first == "" {
				first = fmt.Sprintf("item %s (index row %s): %s starts %q, the index says %q", t.Items[at].ID, r.ID, m.Field, cut(text, 60), cut(prefix, 60))
			}
		}
	}
	if bad > 0 {
		fail("%d of %d index rows differ; the first: %s", bad, len(idx), first)
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ManifestDataOf is what manifest.json records of a task's data: the
// files it read, with their sizes and hashes.
func ManifestDataOf(t *Task) *manifest.Data {
	if t.Data == nil || len(t.Data.Files) == 0 {
		return nil
	}
	md := &manifest.Data{}
	if t.Data.Hub != nil {
		md.Hub = t.Data.Hub.Name()
	}
	if e := t.Data.Entry; e != nil {
		md.Commit = e.Commit
		for i, f := range e.Files {
			md.Files = append(md.Files, manifest.File{Path: t.Data.Files[i], Size: f.Size, SHA256: f.SHA256})
		}
		return md
	}
	for _, p := range t.Data.Files {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		h := sha256.New()
		n, err := io.Copy(h, f)
		f.Close()
		if err == nil {
			md.Files = append(md.Files, manifest.File{Path: p, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
		}
	}
	return md
}

// dataSource says which of a task's layers last set dataset.path or
// dataset.hub: a run file that sets one replaces the task file's other.
func dataSource(layers []layer) string {
	last := ""
	for _, ly := range layers {
		ds := fieldNode(yamlstrict.ResolveAlias(ly.node), "dataset")
		if ds == nil {
			continue
		}
		ds = yamlstrict.ResolveAlias(ds)
		p, h := fieldNode(ds, "path") != nil, fieldNode(ds, "hub") != nil
		switch {
		case p && h:
			last = "" // both in one layer: Check reports it
		case p:
			last = "path"
		case h:
			last = "hub"
		}
	}
	return last
}

// PlanData is what plan says of a task's hub data.
type PlanData struct {
	Task    string `json:"task"`
	Dataset string `json:"dataset"`
	Rows    int    `json:"rows"`
	Bytes   int64  `json:"bytes,omitempty"`
	Cached  bool   `json:"cached"`
	Commit  string `json:"commit,omitempty"`
	Gated   bool   `json:"gated,omitempty"`
}

// DataPlan lists the study's hub datasets: cached (their items counted)
// or to fetch (their declared rows and bytes).
func DataPlan(s *Study) []PlanData {
	var out []PlanData
	for _, t := range s.Tasks {
		d := t.Data
		if d == nil || d.Hub == nil {
			continue
		}
		p := PlanData{Task: t.Name, Dataset: d.Hub.Name(), Rows: len(t.Items), Bytes: d.Hub.Bytes, Cached: !d.Pending, Gated: d.Hub.Gated}
		if e := d.Entry; e != nil {
			p.Commit, p.Bytes = e.Commit, 0
			for _, f := range e.Files {
				p.Bytes += f.Size
			}
		}
		out = append(out, p)
	}
	return out
}

// String is plan's line for the dataset, e.g. "scruples (justinphan3110/scruples:test):
// 1,466 rows, 4.1 MB to fetch".
func (p PlanData) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s %s", p.Task, p.Dataset, thousands(p.Rows), map[bool]string{true: "row", false: "rows"}[p.Rows == 1])
	switch {
	case p.Cached:
		fmt.Fprintf(&b, ", %s cached", Bytes(p.Bytes))
		if len(p.Commit) >= 12 {
			fmt.Fprintf(&b, " (commit %s)", p.Commit[:12])
		}
	case p.Bytes > 0:
		fmt.Fprintf(&b, " (declared), %s to fetch", Bytes(p.Bytes))
	default:
		b.WriteString(" (declared), size known once fetched")
	}
	if !p.Cached && p.Rows == 0 {
		b.WriteString("; no rows: declared in dataset.hub, so its cases are not counted")
	}
	if !p.Cached && p.Gated {
		b.WriteString("; gated: needs HF_TOKEN after accepting its terms on the hub")
	}
	return b.String()
}

// Bytes is a size for people: 4.1 MB.
func Bytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// thousands writes n with comma separators: 1,466.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
