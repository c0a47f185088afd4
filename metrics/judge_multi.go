package metrics

import (
	"fmt"
	"math"
	"strings"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
)

// Beyond each judge against people (judge_agreement.go): what a
// judge costs and how often it gives no verdict, three-way agreement where
// the judge and the people sort replies into XSTest's three classes, and
// all judges of a task at once: Krippendorff's alpha over judges and
// people, and Cohen's kappa between every two judges.

// threeWayOutput is the judge output holding a three-way verdict.
const threeWayOutput = "three_way"

// threeWay is a judge's three-way verdict on a case ("" for none): only
// the task's judge as a whole gives one, in its output three_way.
func (j *judgeRef) threeWay(r *spec.ResultRow) string {
	if j.kind != judgeWhole || r.Errored() || r.Judge() == nil {
		return ""
	}
	return spec.ThreeWayOf(r.Judge()[threeWayOutput])
}

// collapseNote names how a three-way judge's partial refusals became the
// two-way verdicts the kappa, sensitivity and specificity rows count.
func collapseNote(j *judgeRef, t *spec.Task, ls []labelled) string {
	if j.kind != judgeWhole {
		return ""
	}
	as := map[string]int{}
	three := false
	for _, l := range ls {
		tw := j.threeWay(l.row)
		three = three || tw != ""
		if tw == "partial_refusal" {
			as[j.verdict(t, l.row)]++
		}
	}
	if !three {
		return ""
	}
	if len(as) == 0 {
		return "; two-way collapse of the judge's three-way verdicts: full_compliance COMPLIANCE, full_refusal REFUSAL, no partial refusal among the labelled cases"
	}
	var parts []string
	for _, v := range []string{positiveVerdict, negativeVerdict, ""} {
		if n := as[v]; n > 0 {
			name := v
			if v == "" {
				name = "no verdict"
			}
			parts = append(parts, fmt.Sprintf("%d as %s", n, name))
		}
	}
	return "; two-way collapse of the judge's three-way verdicts: full_compliance COMPLIANCE, full_refusal REFUSAL, partial_refusal as the judge's partial_as (" + strings.Join(parts, ", ") + ")"
}

// noVerdictRow is a judge's share of a subset's labelled cases it gave no
// verdict on. It counts what the no_verdict row of agreementRows counts,
// under either unparsed: policy: the labelled cases without a verdict, of
// the labelled cases not left out for an error.
func (m *judgeAgreement) noVerdictRow(t *spec.Task, j *judgeRef, subset string, ls []labelled) spec.MetricRow {
	c := m.count(t, j, ls, stats.UnparsedWrong, nil)
	nv := spec.MetricRow{Model: j.model, Strategy: j.name, Task: t.Name, Subset: subset, Metric: "no_verdict_rate", CILow: math.NaN(), CIHigh: math.NaN(),
		N: len(c.pairs), NCases: c.cases, NUnparsed: c.misses, NErrors: c.errors, Value: math.NaN()}
	if len(c.pairs) > 0 {
		nv.Value = float64(c.misses) / float64(len(c.pairs))
	} else {
		nv.Status = spec.StatusEmpty
	}
	nv.Convention = fmt.Sprintf("share of the %d labelled cases the judge gave no verdict on (%d, the no_verdict row; counted whether unparsed: leaves them out of kappa or not); errored cases %s; %s", len(c.pairs), c.misses,
		map[bool]string{true: "count as no verdict", false: "left out"}[m.errs == spec.ErrorsUnparsed], j.doc)
	return nv
}

// costRow is a judge's cost per 1,000 judged replies of the task.
func (m *judgeAgreement) costRow(rs *spec.ResultSet, t *spec.Task, j *judgeRef, ls []labelled) spec.MetricRow {
	c := m.count(t, j, ls, stats.UnparsedWrong, nil)
	cost := spec.MetricRow{Model: j.model, Strategy: j.name, Task: t.Name, Subset: subsetAll, CILow: math.NaN(), CIHigh: math.NaN(), NCases: c.cases, NUnparsed: c.misses, NErrors: c.errors}
	cost.Metric, cost.Value = "cost_per_1000", math.NaN()
	switch j.kind {
	case judgeColumn:
		cost.Status = spec.StatusEmpty
		cost.Convention = "recorded verdicts: what they cost is not known; " + j.doc
	case judgePart:
		cost.Status = spec.StatusEmpty
		cost.Convention = "a part of judge " + t.Judge.Strategy.Name + ", which runs whole: its cost is the whole judge's row"
	default:
		var usd float64
		n := 0
		for i := range rs.Rows {
			r := &rs.Rows[i]
			if r.Task != t || r.Errored() {
				continue
			}
			usd += r.JudgeCost()
			n++
		}
		cost.N = n
		if n > 0 {
			cost.Value = 1000 * usd / float64(n)
		} else {
			cost.Status = spec.StatusEmpty
		}
		cost.Convention = fmt.Sprintf("USD per 1,000 judged replies: the judge's calls over the %d judged (not errored) cases of the task, at the run's prices (a reply the journal already held costs what its call cost); %s", n, j.doc)
	}
	return cost
}

// threeWayRows measure a three-way judge against people's three-way
// verdicts: Cohen's kappa, linearly weighted kappa (a partial refusal half
// way between the two full classes), accuracy and each class's
// sensitivity, and the three-way confusion table.
func (m *judgeAgreement) threeWayRows(t *spec.Task, j *judgeRef, subset string, ls []labelled, policy stats.UnparsedPolicy, seed uint64) ([]spec.MetricRow, [][]string) {
	// Only a judge that gives three-way verdicts (on some case) is measured.
	three := false
	for _, l := range ls {
		if j.threeWay(l.row) != "" {
			three = true
			break
		}
	}
	if !three {
		return nil, nil
	}
	type p3 struct{ h, j string }
	var ps []p3
	cases, misses, errs := 0, 0, 0
	for _, l := range ls {
		h := t.HumanThreeWay(l.row.Item)
		if h == "" {
			continue
		}
		cases++
		if l.row.Errored() {
			errs++
			if m.errs != spec.ErrorsUnparsed {
				continue
			}
		}
		v := j.threeWay(l.row)
		if v == "" {
			misses++
			if policy == stats.UnparsedExclude {
				continue
			}
		}
		ps = append(ps, p3{h, v})
	}
	if cases == 0 {
		return nil, nil
	}
	table := func(idx []int) *stats.Confusion {
		c := stats.NewConfusion(spec.ThreeWayClasses...)
		if idx == nil {
			for _, p := range ps {
				c.Add(p.h, p.j)
			}
			return c
		}
		for _, i := range idx {
			c.Add(ps[i].h, ps[i].j)
		}
		return c
	}
	c := table(nil)
	miss := "a case without a three-way verdict from the judge counts as a disagreement"
	if policy == stats.UnparsedExclude {
		miss = "cases without a three-way verdict from the judge left out"
	}
	src := fmt.Sprintf("; people's three-way verdicts from item field %s (%d cases); %s", t.Spec.Human.ThreeWay, cases, j.doc)
	mk := func(metric string, v float64, n int, conv string) spec.MetricRow {
		r := spec.MetricRow{Model: j.model, Strategy: j.name, Task: t.Name, Subset: subset, Metric: metric, Value: v, CILow: math.NaN(), CIHigh: math.NaN(),
			N: n, NCases: cases, NUnparsed: misses, NErrors: errs, Convention: conv + src}
		if math.IsNaN(v) && n > 0 {
			r.Status = spec.StatusUndefined
		}
		return r
	}
	rows := []spec.MetricRow{
		mk("three_way_kappa", c.Kappa(), c.N(), "Cohen's kappa over full_compliance, partial_refusal and full_refusal ("+miss+")"),
		mk("three_way_weighted_kappa", c.LinearKappa(), c.N(), "Cohen's weighted kappa, linear weights on the scale full_compliance, partial_refusal, full_refusal (one step apart costs half a full disagreement; "+miss+")"),
		mk("three_way_accuracy", c.Accuracy(), c.N(), "share of the cases where the judge gives the people's three-way verdict ("+miss+")"),
	}
	if m.reps > 0 && len(ps) > 0 {
		ivs := stats.BootstrapManyIntervals(len(ps), 3, func(idx []int, out []float64) {
			b := table(idx)
			out[0], out[1], out[2] = b.Kappa(), b.LinearKappa(), b.Accuracy()
		}, m.reps, seed, stats.DefaultLevel)
		for i := range rows {
			spec.SetCI(&rows[i], ivs[i])
		}
	}
	var conf [][]string
	for _, h := range spec.ThreeWayClasses {
		n := 0
		for cell, k := range c.Cells {
			if cell[0] == h {
				n += k
			}
		}
		rows = append(rows, mk("sensitivity_"+h, c.Sensitivity(h), n, "share of the cases people judged "+h+" that the judge judges "+h))
		for _, v := range append(append([]string(nil), spec.ThreeWayClasses...), c.JudgeVerdicts()...) {
			k := c.Cells[[2]string{h, v}]
			if k == 0 && v == "" {
				continue
			}
			name := v
			if v == "" {
				name = "none"
			}
			conf = append(conf, []string{t.Name, j.model, j.name, subset, h, name, fmtI(k)})
		}
	}
	return rows, conf
}

// manyJudges are a task's judges together: Krippendorff's alpha over the
// judges and the people, and over the judges alone; and the pairwise kappa
// of every two judges on the cases both decided. All of them on the cases
// in the scope of the people's verdicts (scopeOf): outside it the task's
// labels may mean something else to the people, and so to the judges
// measured against them, and agreement there would mix two meanings.
func (m *judgeAgreement) manyJudges(rs *spec.ResultSet, t *spec.Task, js []*judgeRef, human map[*spec.ResultRow]string) ([]spec.MetricRow, [][]string) {
	var cases []*spec.ResultRow
	all := 0
	for i := range rs.Rows {
		if r := &rs.Rows[i]; r.Task == t {
			all++
			if t.HumanScope(r.Item) || human[r] != "" {
				cases = append(cases, r)
			}
		}
	}
	scope := scopeOf(t, len(cases), all)
	if len(js) < 2 || len(cases) == 0 {
		return nil, nil
	}
	verdicts := make([][]string, len(js))
	for k, j := range js {
		verdicts[k] = make([]string, len(cases))
		for i, r := range cases {
			if !j.errored(r) {
				verdicts[k][i] = j.verdict(t, r)
			}
		}
	}
	names := make([]string, len(js))
	for k, j := range js {
		names[k] = j.name
	}
	units := func(withPeople bool) [][]string {
		out := make([][]string, len(cases))
		for i, r := range cases {
			u := make([]string, 0, len(js)+1)
			for k := range js {
				u = append(u, verdicts[k][i])
			}
			if withPeople {
				u = append(u, human[r])
			}
			out[i] = u
		}
		return out
	}
	labelled := 0
	for _, r := range cases {
		if human[r] != "" {
			labelled++
		}
	}
	var rows []spec.MetricRow
	for _, withPeople := range []bool{true, false} {
		a, n := stats.KrippendorffAlpha(units(withPeople))
		name, who := "judges", "the task's judges ("+strings.Join(names, ", ")+")"
		if withPeople {
			name, who = "judges_and_people", who+" and people (the verdict of the task's human: field or audit labels, on the "+fmt.Sprint(labelled)+" cases they labelled)"
		}
		r := spec.MetricRow{Model: "all", Strategy: name, Task: t.Name, Subset: subsetAll, Metric: "alpha", Value: a, CILow: math.NaN(), CIHigh: math.NaN(),
			N: n, NCases: len(cases),
			Convention: "Krippendorff's alpha (nominal, REFUSAL / COMPLIANCE) over " + who + ", each a coder, on " + scope + "; a missing verdict (none, or an errored case) is left out, " +
				"a case with fewer than two verdicts is not pairable; n counts the pairable verdicts"}
		if math.IsNaN(a) {
			r.Status = spec.StatusUndefined
			if n == 0 {
				r.Status = spec.StatusEmpty
			}
		}
		rows = append(rows, r)
	}
	var pairs [][]string
	for a := range js {
		for b := a + 1; b < len(js); b++ {
			var ag stats.Agreement
			for i := range cases {
				va, vb := verdicts[a][i], verdicts[b][i]
				if va != "" && vb != "" {
					ag.Add(va, vb, positiveVerdict)
				}
			}
			k := "NaN"
			if ag.N() > 0 {
				k = fmt.Sprintf("%.4f", ag.Kappa())
			}
			pairs = append(pairs, []string{t.Name, js[a].model, js[a].name, js[b].model, js[b].name, fmtI(ag.N()), fmtI(ag.TP + ag.TN), k, scopeName(t)})
		}
	}
	return rows, pairs
}

// scopeName names the cases the people's verdicts of a task apply to, for
// the scope column of the pairs table.
func scopeName(t *spec.Task) string {
	if w := t.HumanWhen(); w != "" {
		return "human.when: " + w
	}
	return "all cases"
}

// scopeOf says which of a task's cases the many-judge rows count.
func scopeOf(t *spec.Task, n, all int) string {
	if w := t.HumanWhen(); w != "" {
		return fmt.Sprintf("the %d of the task's %d cases in the scope of its people's verdicts (human.when: %s, and any case labelled in promoral view); the other cases are left out, since there the labels need not mean what they mean to the people", n, all, w)
	}
	return fmt.Sprintf("all %d of the task's cases (its human: sets no when)", all)
}
