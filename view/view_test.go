package view

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
)

func openDemo(t *testing.T) (*Run, []map[string]any) {
	t.Helper()
	dir := demoRun(t)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	r.idx.wait()
	if r.idx.err != nil {
		t.Fatal(r.idx.err)
	}
	rows, err := parquetio.Read(filepath.Join(dir, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != r.Len() {
		t.Fatalf("the view has %d cases, results.parquet %d rows", r.Len(), len(rows))
	}
	return r, rows
}

func sel(kv ...string) map[string][]string {
	m := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = append(m[kv[i]], kv[i+1])
	}
	return m
}

func facetCount(m *Match, facet, value string) int {
	for _, f := range m.Facets {
		if f.Name != facet {
			continue
		}
		for _, v := range f.Values {
			if v.Value == value {
				return v.N
			}
		}
	}
	return 0
}

// The counts the page shows are recomputed here from results.parquet as
// parquetio.Read reads it: the filters, the facet counts (each ignoring its
// own selection) and the outcome of every case.
func TestFindCountsMatchResults(t *testing.T) {
	r, rows := openDemo(t)
	outcomeOf := func(row map[string]any) string {
		switch {
		case row["error"] != nil:
			return "error"
		case row["parsed"] != true:
			return "unparsed"
		case row["correct"] == true:
			return "right"
		case row["correct"] == false:
			return "wrong"
		}
		return "no gold"
	}
	count := func(keep func(map[string]any) bool) int {
		n := 0
		for _, row := range rows {
			if keep(row) {
				n++
			}
		}
		return n
	}
	all, err := r.Find(Query{Sel: sel()})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Cases) != len(rows) {
		t.Fatalf("no filter: %d cases, want %d", len(all.Cases), len(rows))
	}
	for _, f := range all.Facets {
		if f.Name == "subset" {
			continue
		}
		sum := 0
		for _, v := range f.Values {
			sum += v.N
		}
		if sum != len(rows) {
			t.Errorf("facet %s counts add up to %d, want %d (every case has one value)", f.Name, sum, len(rows))
		}
	}
	for _, oc := range outcomes {
		want := count(func(row map[string]any) bool { return outcomeOf(row) == oc })
		if got := facetCount(all, "outcome", oc); got != want {
			t.Errorf("outcome %s: %d, want %d", oc, got, want)
		}
	}
	// The error facet names the error's class: the 400 is a rejection.
	if facetCount(all, "error", "rejected") != 1 || facetCount(all, "truncated", "cut off") != 1 {
		t.Errorf("the demo has one rejected request and one cut-off reply: %d, %d", facetCount(all, "error", "rejected"), facetCount(all, "truncated", "cut off"))
	}

	// Two values of one facet are OR; two facets are AND; a facet's own
	// counts ignore its selection.
	m, _ := r.Find(Query{Sel: sel("model", "gpt-4.1", "model", "claude-sonnet-4", "outcome", "wrong")})
	want := count(func(row map[string]any) bool {
		return (row["model"] == "gpt-4.1" || row["model"] == "claude-sonnet-4") && outcomeOf(row) == "wrong"
	})
	if len(m.Cases) != want || want == 0 {
		t.Errorf("two models, wrong: %d cases, want %d", len(m.Cases), want)
	}
	for _, model := range []string{"gpt-4.1", "bot", "scripted-keyword"} {
		w := count(func(row map[string]any) bool { return row["model"] == model && outcomeOf(row) == "wrong" })
		if got := facetCount(m, "model", model); got != w {
			t.Errorf("model facet %s under outcome=wrong: %d, want %d", model, got, w)
		}
	}
	w := count(func(row map[string]any) bool {
		return row["model"] == "gpt-4.1" || row["model"] == "claude-sonnet-4"
	})
	total := 0
	for _, oc := range outcomes {
		total += facetCount(m, "outcome", oc)
	}
	if total != w {
		t.Errorf("outcome facet under the model filter adds up to %d, want %d", total, w)
	}

	// Subsets come from the run's subsets column.
	m, _ = r.Find(Query{Sel: sel("subset", "harmful")})
	want = count(func(row map[string]any) bool {
		s, _ := row["subsets"].(string)
		return strings.Contains(s, `"harmful"`)
	})
	if len(m.Cases) != want || want == 0 {
		t.Errorf("subset harmful: %d, want %d", len(m.Cases), want)
	}
	// Judge verdicts and audit flags come from the judge column.
	m, _ = r.Find(Query{Sel: sel("audit", "flagged")})
	want = count(func(row map[string]any) bool {
		var j map[string]any
		s, _ := row["judge"].(string)
		return json.Unmarshal([]byte(s), &j) == nil && j["audit"] == true
	})
	if len(m.Cases) != want || want == 0 {
		t.Errorf("audit flagged: %d, want %d", len(m.Cases), want)
	}
	// An unknown value matches nothing rather than everything.
	if m, _ := r.Find(Query{Sel: sel("model", "no-such-model")}); len(m.Cases) != 0 {
		t.Errorf("an unknown model matched %d cases", len(m.Cases))
	}
	// Sorting by confidence puts missing confidences last.
	m, _ = r.Find(Query{Sel: sel("task", "ethics"), Sort: "-conf"})
	for k := 1; k < len(m.Cases); k++ {
		a, b := r.conf[m.Cases[k-1]], r.conf[m.Cases[k]]
		if !math.IsNaN(b) && (math.IsNaN(a) || a < b) {
			t.Fatalf("sort -conf: %v before %v", a, b)
		}
	}
}

// Search finds a case when every query word starts a word of its item,
// outputs, judge outputs or replies; checked against a plain scan of the
// files.
func TestSearchAgainstScan(t *testing.T) {
	r, rows := openDemo(t)
	texts := map[string]*strings.Builder{}
	for _, row := range rows {
		b := &strings.Builder{}
		for _, c := range []string{"item", "outputs", "judge"} {
			if s, ok := row[c].(string); ok {
				var v any
				json.Unmarshal([]byte(s), &v)
				collect(b, v)
			}
		}
		texts[row["case_id"].(string)] = b
	}
	if err := parquetio.Scan(filepath.Join(r.Dir, "calls.parquet"), []string{"case_id", "response_text"}, nil, func(row map[string]any) {
		if s, ok := row["response_text"].(string); ok {
			texts[row["case_id"].(string)].WriteString(" " + s)
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"passport", "refus", "birthday decorations", "Final answer", "Context-dependent", "overview risks", "zzzz"} {
		var res []*regexp.Regexp
		for _, w := range strings.Fields(q) {
			for _, part := range regexp.MustCompile(`[^\pL\pN]+`).Split(w, -1) {
				if part != "" {
					res = append(res, regexp.MustCompile(`(?i)(^|[^\pL\pN])`+regexp.QuoteMeta(part)))
				}
			}
		}
		var want []string
		for id, b := range texts {
			ok := true
			for _, re := range res {
				ok = ok && re.MatchString(b.String())
			}
			if ok {
				want = append(want, id)
			}
		}
		m, err := r.Find(Query{Sel: sel(), Q: q})
		if err != nil || m.Search != "ready" {
			t.Fatalf("%q: %v %s", q, err, m.Search)
		}
		var got []string
		for _, i := range m.Cases {
			got = append(got, r.id[i])
		}
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("search %q: %d cases, the scan finds %d\n got %.300v\nwant %.300v", q, len(got), len(want), got, want)
		}
		if q != "zzzz" && len(want) == 0 {
			t.Errorf("search %q: the demo has no such case, the test checks nothing", q)
		}
	}
}

func collect(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		b.WriteString(" " + x)
	case float64, bool:
		fmt.Fprint(b, " ", x)
	case map[string]any:
		for _, e := range x {
			collect(b, e)
		}
	case []any:
		for _, e := range x {
			collect(b, e)
		}
	}
}

// A case page has every stage run in order with the call each prompt
// stage made, the extract stages' fields and rules, the branch's choice,
// the judge's stages, and errors with the failed attempt.
func TestCasePage(t *testing.T) {
	r, _ := openDemo(t)
	find := func(kv ...string) int {
		t.Helper()
		m, _ := r.Find(Query{Sel: sel(kv...)})
		if len(m.Cases) == 0 {
			t.Fatalf("no case for %v", kv)
		}
		return int(m.Cases[0])
	}
	c, err := r.Case(find("strategy", "self_correct"))
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, s := range c.Steps {
		seq = append(seq, s.Stage)
	}
	if !strings.HasPrefix(strings.Join(seq, " "), "answer answer_parse current critique revise revise_parse converged") {
		t.Errorf("self_correct stages: %v", seq)
	}
	for _, s := range c.Steps {
		isPrompt := s.Stage == "answer" || s.Stage == "critique" || s.Stage == "revise"
		if isPrompt != (s.Calls != nil) {
			t.Errorf("stage %s: call %v", s.Stage, s.Calls != nil)
		}
		if s.Calls != nil {
			last := s.Calls.Attempts[len(s.Calls.Attempts)-1]
			var msgs []map[string]string
			if err := json.Unmarshal(last.Messages, &msgs); err != nil || len(msgs) == 0 || last.Reply == nil || *last.Reply == "" {
				t.Errorf("stage %s: messages %s, reply %v", s.Stage, last.Messages, last.Reply)
			}
		}
	}
	// Each step says its stage's kind, as the strategy file names it.
	kinds := map[string]string{}
	for _, s := range c.Steps {
		kinds[s.Stage] = s.Kind
	}
	for stage, kind := range map[string]string{"answer": "prompt", "answer_parse": "extract", "current": "compute", "critique": "prompt", "converged": "branch"} {
		if kinds[stage] != kind {
			t.Errorf("stage %s has kind %q in the trace, want %q", stage, kinds[stage], kind)
		}
	}
	if c.Steps[1].Out["label_rule"] != "prefix:Final Answer" || c.Steps[1].Note["source"] != "answer" {
		t.Errorf("answer_parse: %+v", c.Steps[1])
	}
	if c.Steps[6].Next == "" {
		t.Errorf("the branch's choice is missing: %+v", c.Steps[6])
	}
	var item map[string]any
	if json.Unmarshal(c.Item, &item) != nil || item["scenario"] == nil {
		t.Errorf("item: %s", c.Item)
	}

	j, err := r.Case(find("task", "safety", "audit", "flagged"))
	if err != nil {
		t.Fatal(err)
	}
	judged := 0
	for _, s := range j.Steps {
		if strings.HasPrefix(s.Stage, "judge.") {
			judged++
		}
	}
	if judged < 5 || len(j.Judge) == 0 {
		t.Errorf("judge stages %d, judge outputs %s", judged, j.Judge)
	}

	e, err := r.Case(find("outcome", "error"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Error, "400") {
		t.Errorf("error case: %q", e.Error)
	}
	failed := false
	for _, s := range e.Steps {
		if s.Calls != nil && s.Calls.Attempts[len(s.Calls.Attempts)-1].Error != "" {
			failed = true
		}
	}
	if !failed {
		t.Errorf("the failed attempt is not on the page: %+v", e.Steps)
	}
	if _, err := r.Case(r.Len()); err == nil {
		t.Error("a case past the end was served")
	}
}

// Unparsed cases are grouped by shape; the groups hold every unparsed
// case once, and each has the nearest rule and a reason.
func TestUnparsedGroups(t *testing.T) {
	r, rows := openDemo(t)
	all, _ := r.Find(Query{Sel: sel()})
	u, err := r.Unparsed(all.Cases)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, row := range rows {
		if row["parsed"] != true && row["error"] == nil {
			want++
		}
	}
	if u.Total != want || want == 0 {
		t.Fatalf("unparsed total %d, want %d", u.Total, want)
	}
	seen := map[int32]bool{}
	n := 0
	for _, g := range u.Groups {
		n += g.N
		if len(g.Cases) != g.N {
			t.Errorf("group %q: %d cases for n=%d", g.Shape, len(g.Cases), g.N)
		}
		for _, i := range g.Cases {
			if seen[i] {
				t.Errorf("case %d in two groups", i)
			}
			seen[i] = true
		}
		if len(g.Why) == 0 || g.Stage == "" {
			t.Errorf("group %q has no reason or stage", g.Shape)
		}
		for _, ex := range g.Examples {
			// The recorded replies have one rule; the judge's own
			// extraction has several.
			if g.Stage == "parse" && ex.Rule != "final_answer_line" || ex.Rule == "" {
				t.Errorf("group %q (stage %s): nearest rule %q", g.Shape, g.Stage, ex.Rule)
			}
		}
	}
	if n != want {
		t.Errorf("groups hold %d cases, want %d", n, want)
	}
	if u.Groups[0].N < u.Groups[len(u.Groups)-1].N {
		t.Error("groups are not largest first")
	}
}

// The paired numbers of a within-run comparison are those of
// stats.PairedDiff on the same items, pairs keyed by item; recorded
// replies pair across strategies by their item number.
func TestCompareStrategies(t *testing.T) {
	r, rows := openDemo(t)
	c, err := CompareRuns(r, r, Compare{By: "strategy", A: "zero_shot", B: "first_principles", Q: Query{Sel: sel(), Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ model, item string }
	side := map[string]map[key]any{"zero_shot": {}, "first_principles": {}}
	for _, row := range rows {
		if row["task"] != "promoral_replies" {
			continue
		}
		var it map[string]any
		json.Unmarshal([]byte(row["item"].(string)), &it)
		// The promoral block leaves unparsed replies out (unparsed: exclude),
		// and so does the pairing.
		if row["parsed"] != true {
			continue
		}
		side[row["strategy"].(string)][key{row["model"].(string), fmt.Sprint(it["item"])}] = row["correct"]
	}
	for _, cell := range c.Cells {
		model := strings.Split(cell.Cell, " · ")[0]
		var a, b []bool
		for k, ca := range side["zero_shot"] {
			cb, ok := side["first_principles"][k]
			if k.model != model || !ok {
				continue
			}
			if x, ok1 := ca.(bool); ok1 {
				if y, ok2 := cb.(bool); ok2 {
					a, b = append(a, x), append(b, y)
				}
			}
		}
		if len(a) == 0 {
			t.Fatalf("cell %s: no pairs in the files", cell.Cell)
		}
		d := stats.PairedDiff(a, b, diffReps, diffSeed)
		if cell.N != d.N || cell.RightToW != d.B || cell.WrongToR != d.C || math.Abs(cell.Diff.(float64)-d.MeanDiff) > 1e-12 {
			t.Errorf("cell %s: n %d b %d c %d diff %v; want %d %d %d %v", cell.Cell, cell.N, cell.RightToW, cell.WrongToR, cell.Diff, d.N, d.B, d.C, d.MeanDiff)
		}
	}
	if len(c.Cells) != 2 || c.Flips == 0 {
		t.Fatalf("cells %d, flips %d", len(c.Cells), c.Flips)
	}
	for k, p := range c.Pairs {
		if k > 0 && (p.Flip == "now right" || p.Flip == "now wrong") && !(c.Pairs[k-1].Flip == "now right" || c.Pairs[k-1].Flip == "now wrong") {
			t.Fatal("flips are not first")
		}
	}
	if _, err := CompareRuns(r, r, Compare{By: "run", Q: Query{Sel: sel()}}); err == nil {
		t.Error("comparing a run with itself by run was accepted")
	}
}

// Comparing two runs gives the numbers `promoral diff` prints.
func TestCompareRunsAsDiff(t *testing.T) {
	a := demoRun(t)
	// The second run re-scores the recorded replies with a looser rule,
	// as a person fixing a rule would (under unparsed: exclude the newly
	// parsed replies are left out of the pairs), and its scripted model
	// knows fewer wrong deeds, so some ETHICS answers flip.
	dir := t.TempDir()
	root, _ := filepath.Abs("..")
	cfg := strings.ReplaceAll(demoYAML, "stole|kill|lied|hit|cheat|hurt|broke|threw|mock", "stole|kill|lied")
	cfg = strings.Replace(cfg, "  - use: promoral_replies\n", `  - use: promoral_replies
    extract:
      label:
        - {kind: prefix, prefix: Final Answer}
        - {kind: last_line, match: search}
      confidence:
        - {kind: prefix, prefix: Confidence}
`, 1)
	cfg += "paths: {strategies: " + filepath.Join(root, "configs/strategies") + ", tasks: " + filepath.Join(root, "configs/tasks") +
		", models: " + filepath.Join(root, "configs/models") + ", prompts: " + filepath.Join(root, "prompts") + "}\n"
	if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := spec.LoadWith(filepath.Join(dir, "b.yaml"), spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "out")
	if _, _, err := engine.NewEngine(st, engine.Options{OutDir: b, Scorer: scoring.New()}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ra, err := Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	c, err := CompareRuns(ra, rb, Compare{By: "run", Q: Query{Sel: sel(), Limit: 10}})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := review.CompareRuns(a, b, review.RunDiffOptions{Seed: diffSeed})
	if err != nil {
		t.Fatal(err)
	}
	// promoral diff's figures for each cell, as it prints them.
	want := map[string][]string{}
	for _, cell := range rc.Cells {
		d := cell.Diff
		want[cell.Model+" · "+cell.Strategy+" · "+cell.Task] = []string{strconv.Itoa(d.N), fmt.Sprintf("%+.4f", d.MeanDiff), fmt.Sprintf("%+.4f", d.Lo), fmt.Sprintf("%+.4f", d.Hi),
			strconv.Itoa(d.B), strconv.Itoa(d.C), fmt.Sprintf("%.4g", d.McNemarP), fmt.Sprintf("%.4g", cell.Holm), strconv.Itoa(cell.Dropped)}
	}
	if len(want) == 0 {
		t.Fatalf("no cell in the diff")
	}
	flips := 0
	for _, cell := range c.Cells {
		w, ok := want[cell.Cell]
		if !ok {
			if cell.N > 0 {
				t.Errorf("cell %s (n=%d) is not in the diff", cell.Cell, cell.N)
			}
			continue
		}
		f4 := func(v any) string { return fmt.Sprintf("%+.4f", v) }
		got := []string{strconv.Itoa(cell.N), f4(cell.Diff), f4(cell.Lo), f4(cell.Hi), strconv.Itoa(cell.RightToW), strconv.Itoa(cell.WrongToR),
			fmt.Sprintf("%.4g", cell.P), fmt.Sprintf("%.4g", cell.Holm), strconv.Itoa(cell.Unscored)}
		if !slices.Equal(got, w) {
			t.Errorf("cell %s:\n view %v\n diff %v", cell.Cell, got, w)
		}
		flips += cell.RightToW + cell.WrongToR
		delete(want, cell.Cell)
	}
	if len(want) > 0 {
		t.Errorf("cells of the diff the view lacks: %v", want)
	}
	if flips == 0 || c.Flips != flips {
		t.Errorf("flips: %d in the cells, %d listed; the looser rule should flip some", flips, c.Flips)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "no results.parquet") {
		t.Errorf("empty folder: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "results.parquet"), []byte("not parquet"), 0o644)
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "results.parquet")) {
		t.Errorf("damaged file: %v", err)
	}
}

// A run written before the trace and subsets columns still opens: the list
// and filters work, a case page says what is missing and how to get it.
func TestRunWithoutTrace(t *testing.T) {
	dir := t.TempDir()
	w, err := parquetio.Create(filepath.Join(dir, "results.parquet"), []parquetio.Column{
		{Name: "case_id", Type: parquetio.ColString}, {Name: "model", Type: parquetio.ColString}, {Name: "strategy", Type: parquetio.ColString},
		{Name: "task", Type: parquetio.ColString}, {Name: "item_id", Type: parquetio.ColString}, {Name: "gold", Type: parquetio.ColString},
		{Name: "label", Type: parquetio.ColString}, {Name: "parsed", Type: parquetio.ColBool}, {Name: "correct", Type: parquetio.ColBool},
		{Name: "item", Type: parquetio.ColString}, {Name: "error", Type: parquetio.ColString},
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]any{
		{"m/s/t/a", "m", "s", "t", "a", "yes", "yes", true, true, `{"text":"first"}`, nil},
		{"m/s/t/b", "m", "s", "t", "b", "no", nil, false, false, `{"text":"second"}`, nil},
		{"m/s/t/c", "m", "s", "t", "c", "no", nil, false, nil, nil, "stage \"ask\": boom"},
	}
	for _, row := range rows {
		if err := w.Append(row...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.idx.wait()
	m, _ := r.Find(Query{Sel: sel("outcome", "unparsed")})
	if len(m.Cases) != 1 || r.id[m.Cases[0]] != "m/s/t/b" || facetCount(m, "outcome", "error") != 1 {
		t.Errorf("unparsed: %v", m.Cases)
	}
	c, err := r.Case(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notes) == 0 || !strings.Contains(c.Notes[0], "apply") {
		t.Errorf("no note about the missing trace: %v", c.Notes)
	}
	u, _ := r.Unparsed(m.Cases)
	if u.Trace || len(u.Groups) != 1 || !strings.Contains(u.Groups[0].Shape, "no trace") {
		t.Errorf("unparsed without a trace: %+v", u)
	}
	if m, _ := r.Find(Query{Sel: sel(), Q: "second"}); len(m.Cases) != 1 {
		t.Errorf("search without calls.parquet: %v", m.Cases)
	}
}
