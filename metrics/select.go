package metrics

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
)

func init() {
	spec.RegisterMetric(spec.MetricKind{
		Name: "select_candidate",
		Doc: "Picks, per model, the best of the candidate texts a selection strategy tried on every item (outputs candidates and candidate_labels, " +
			"e.g. role_confirmation_selection): accuracy + F1 of answer.positive per candidate, ties to the lowest index. " +
			"Writes a CSV table of every candidate and, with write:, the chosen texts as per-model vars ({<model>: {<var>: <text>}}) for a model's vars_file.",
		New: func() spec.MetricConfig { return &SelectCandidateConfig{} },
		Rows: spec.RowsDoc{
			Lead: "Per model and candidate text of a selection strategy; with `write:` the chosen texts go to a vars file " +
				"a model's `vars_file:` reads.",
			Rows: []spec.RowDoc{
				{Names: []string{"accuracy", "f1"}, Def: "per candidate (the row's `subset`): accuracy and F1 of the positive class", N: "the candidate's items"},
				{Names: []string{"score"}, Def: "accuracy + F1 of the positive class", N: "the candidate's items"},
				{Names: []string{"chosen_candidate"}, Def: "index of the candidate with the best score (ties to the lowest index)", N: "the chosen candidate's items"},
				{Names: []string{"chosen_accuracy", "chosen_f1"}, Def: "the chosen candidate's accuracy and F1", N: "the chosen candidate's items"},
			},
		},
	})
}

// The outputs a selection strategy gives every case.
const (
	outCandidates      = "candidates"       // the candidate texts, identical for every item of a model
	outCandidateLabels = "candidate_labels" // the label each candidate led to on this item, "" when unparsed
)

// SelectCandidateConfig is the YAML of a select_candidate metric block.
type SelectCandidateConfig struct {
	spec.MetricBase `yaml:",inline"`
	Write           string `yaml:"write,omitempty" doc:"File (relative to the run folder) the chosen texts are written to as {<model name>: {<var>: <text>}}, the format of a model's vars_file; empty: write none."`
	Var             string `yaml:"var,omitempty" default:"role_confirmation" doc:"Name of the model var the chosen text is written under (default role_confirmation)."`
	Table           string `yaml:"table,omitempty" default:"role_candidates" doc:"Name of the CSV table of every candidate's scores (default role_candidates, written as <table>.csv)."`
	Unparsed        string `yaml:"unparsed,omitempty" enum:"wrong,exclude" inherit:"settings.unparsed" doc:"How unparsed answers count: wrong (kept in n and counted wrong) or exclude (left out of n, the ProMoral study's policy); default: the run's settings.unparsed."`
}

type selectCandidate struct {
	errs   string
	tasks  map[string]*spec.Task
	write  string
	varN   string
	table  string
	policy string
}

// Build checks the block against the study: a binary task to score and a
// strategy that records candidates.
func (c *SelectCandidateConfig) Build(b *spec.MetricBuild) spec.Metric {
	m := &selectCandidate{errs: c.MetricBase.ErrorsPolicy(), write: c.Write, varN: c.Var, table: c.Table, policy: c.Unparsed}
	if why := spec.IdentProblem(m.table); why != "" {
		b.Errf("table", spec.IdentHint, "table %s %s: it names a CSV file in the output folder", spec.Clip(m.table, 40), why)
	}
	if w := c.Write; w != "" {
		if filepath.IsAbs(w) || !filepath.IsLocal(w) {
			b.Errf("write", "give a path inside the run folder, e.g. role_confirmations.yaml", "write %q leaves the run folder", w)
		}
	}
	m.tasks = selectTasks(b, func(t *spec.Task) string {
		switch {
		case !isBinary(t):
			return "accuracy + F1 needs a binary task with answer.positive"
		case t.Spec.Gold == "":
			return "it has no gold field"
		}
		return ""
	})
	found := false
	for _, s := range b.Study.Strategies {
		names := s.OutputNames()
		found = found || slices.Contains(names, outCandidates) && slices.Contains(names, outCandidateLabels)
	}
	if !found {
		b.Errf("", "run a selection strategy such as role_confirmation_selection", "no strategy of this run has the outputs %s and %s", outCandidates, outCandidateLabels)
	}
	return m
}

// candScore is one candidate of one cell.
type candScore struct {
	acc, f1, score float64
	n              int
}

// pick is the choice for one cell.
type pick struct {
	c      *cell
	texts  []string
	scores []candScore
	best   int // -1: nothing scored
}

// ReadsOutputs says the block reads the outputs of its tasks' cases.
func (m *selectCandidate) ReadsOutputs(t *spec.Task) bool { return m.tasks[t.Name] != nil }

// UnparsedOverride is the block's unparsed: ("" = the run's).
func (m *selectCandidate) UnparsedOverride() string { return m.policy }

// Compute scores every candidate of every cell, picks the best per model and
// writes the chosen texts.
func (m *selectCandidate) Compute(rs *spec.ResultSet) (*spec.MetricOutput, error) {
	policy := policyOf(m.policy, rs)
	out := &spec.MetricOutput{}
	var picks []*pick
	byModel := map[string]*cell{}
	for _, c := range groupCells(rs, m.tasks, m.errs) {
		if len(c.Rows) == 0 || c.Rows[0].Outputs()[outCandidateLabels] == nil {
			continue // another strategy of the run, or nothing finished
		}
		if prev := byModel[c.Model]; prev != nil {
			return nil, fmt.Errorf("select_candidate: model %s has candidates from two cells (%s/%s and %s/%s); restrict the block with tasks: or run one selection strategy",
				c.Model, prev.Task.Name, prev.Strategy, c.Task.Name, c.Strategy)
		}
		byModel[c.Model] = c
		p, err := m.score(c, policy)
		if err != nil {
			return nil, err
		}
		picks = append(picks, p)
	}

	tbl := spec.CSVTable{Name: m.table, Header: []string{"model", "candidate", "status", "accuracy", "f1", "score", "chosen", "text"}}
	chosen := map[string]map[string]string{}
	var text strings.Builder
	fmt.Fprintf(&text, "Candidate selection (accuracy + F1 of the positive class; unparsed: %s):", policy)
	for _, p := range picks {
		c := p.c
		for k, s := range p.scores {
			sub := fmt.Sprintf("candidate_%d", k)
			out.Rows = append(out.Rows, row(c, sub, "accuracy", s.acc, s.n), row(c, sub, "f1", s.f1, s.n), row(c, sub, "score", s.score, s.n))
			inc := incomplete(c, m.errs)
			status := spec.StatusOK
			if inc {
				status = spec.StatusIncomplete
			}
			tbl.Rows = append(tbl.Rows, append(append([]string{c.Model, fmtI(k), status}, withheld(inc, fmtF(s.acc), fmtF(s.f1), fmtF(s.score))...),
				fmt.Sprint(k == p.best && !inc), p.texts[k]))
		}
		if p.best < 0 {
			fmt.Fprintf(&text, "\n  %s: no candidate could be scored; nothing chosen", c.Model)
			continue
		}
		if e := c.nErrors(); e > 0 && m.errs == spec.ErrorsIncomplete {
			// A choice from part of the items is not the choice: apply
			// again (errored cases are retried), or say how they count.
			fmt.Fprintf(&text, "\n  %s: %d of %d cases errored; nothing chosen (apply again to retry them, or set errors: exclude or unparsed)", c.Model, e, c.nCases())
			continue
		}
		s := p.scores[p.best]
		out.Rows = append(out.Rows, row(c, subsetAll, "chosen_candidate", float64(p.best), s.n),
			row(c, subsetAll, "chosen_accuracy", s.acc, s.n), row(c, subsetAll, "chosen_f1", s.f1, s.n))
		chosen[c.Model] = map[string]string{m.varN: p.texts[p.best]}
		fmt.Fprintf(&text, "\n  %s: candidate %d of %d (accuracy %.3f, F1 %.3f, n %d): %q", c.Model, p.best, len(p.texts), s.acc, s.f1, s.n, p.texts[p.best])
	}
	out.Tables = []spec.CSVTable{tbl}
	if m.write != "" {
		data, err := chosenFile(rs.Study.Run.Name, m.varN, chosen)
		if err != nil {
			return nil, fmt.Errorf("select_candidate: %w", err)
		}
		out.Files = append(out.Files, spec.OutFile{Name: m.write, Data: data})
		fmt.Fprintf(&text, "\n  written to %s", filepath.Join(rs.OutDir, m.write))
	}
	out.Text = text.String()
	return out, nil
}

// score computes accuracy, F1 and their sum for every candidate of a cell.
func (m *selectCandidate) score(c *cell, policy stats.UnparsedPolicy) (*pick, error) {
	p := &pick{c: c, best: -1}
	var labels [][]string // per item: the label of each candidate
	var gold []string
	for i, r := range c.Rows {
		texts, err := stringList(r.Outputs()[outCandidates])
		if err != nil {
			return nil, fmt.Errorf("select_candidate: case %s: output %s: %v", r.ID(), outCandidates, err)
		}
		if i == 0 {
			p.texts = texts
		} else if !slices.Equal(texts, p.texts) {
			// The candidates request does not depend on the item, so every
			// item of a model must have been served the same samples.
			return nil, fmt.Errorf("select_candidate: model %s, task %s: case %s tried other candidates than case %s; the candidates must not depend on the item",
				c.Model, c.Task.Name, r.ID(), c.Rows[0].ID())
		}
		if r.Item.Gold == "" {
			continue
		}
		ls, err := stringList(r.Outputs()[outCandidateLabels])
		if err != nil {
			return nil, fmt.Errorf("select_candidate: case %s: output %s: %v", r.ID(), outCandidateLabels, err)
		}
		labels, gold = append(labels, ls), append(gold, r.Item.Gold)
	}
	for i := range p.texts {
		p.texts[i] = strings.TrimSpace(p.texts[i])
	}
	pred, parsed := make([]string, len(gold)), make([]bool, len(gold))
	for k := range p.texts {
		for i, ls := range labels {
			pred[i], parsed[i] = "", false
			if k < len(ls) { // a missing try counts as unparsed
				pred[i] = ls[k]
				parsed[i] = slices.Contains(c.Task.Labels, ls[k])
			}
		}
		acc, n := stats.Accuracy(pred, gold, parsed, policy)
		f1 := stats.BinaryPRF(pred, gold, parsed, policy, c.Task.Positive).F1
		s := candScore{acc: acc, f1: f1, score: acc + f1, n: n}
		p.scores = append(p.scores, s)
		if len(gold) > 0 && !math.IsNaN(s.score) && (p.best < 0 || s.score > p.scores[p.best].score) {
			p.best = k
		}
	}
	return p, nil
}

// stringList reads a list output (in memory []any, or []string).
func stringList(v any) ([]string, error) {
	switch xs := v.(type) {
	case []string:
		return slices.Clone(xs), nil
	case []any:
		out := make([]string, len(xs))
		for i, x := range xs {
			switch s := x.(type) {
			case string:
				out[i] = s
			case nil:
			default:
				return nil, fmt.Errorf("element %d is %T, not a string", i, x)
			}
		}
		return out, nil
	case nil:
		return nil, fmt.Errorf("missing")
	}
	return nil, fmt.Errorf("is %T, not a list", v)
}

// chosenFile is the vars file of the chosen texts, {<model>: {<var>: <text>}}.
func chosenFile(run, varName string, chosen map[string]map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Per-model %s chosen by the select_candidate metric of run %s.\n", varName, run)
	fmt.Fprintf(&buf, "# Read by the models' vars_file; rerun the selection to replace it.\n")
	if len(chosen) == 0 {
		buf.WriteString("{}\n")
	} else {
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(chosen); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
