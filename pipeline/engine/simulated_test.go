package engine_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"

	"github.com/promoral/promoral/pipeline/spec"
)

// simulatedTree is the toy task over n generated items, with a simulated
// model declared by model (YAML of one model entry).
func simulatedTree(n int, model, metrics string) map[string]string {
	var items strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&items, `{"id":"i%03d","text":"I did thing %d.","gold":"%d"}`+"\n", i, i, i%2)
	}
	return studytest.BaseTree(map[string]string{
		"data/items.jsonl": items.String(),
		"configs/run.yaml": `name: sim-run
models:
` + model + `
tasks: [toy]
strategies: [one_shot, loop]
settings: {concurrency: 4, repeats: 2}
metrics:
` + metrics,
	})
}

// provider: simulated alone runs a study: its replies parse, its accuracy
// is near the default 0.75, a strategy's effect shows in the compare block,
// repeats flip, confidence is higher when right, and a second study with
// the same settings gives the same answers.
func TestSimulatedModelRunsAStudy(t *testing.T) {
	metrics := `  - {kind: classification, bootstrap: 0}
  - {kind: repeats, bootstrap: 0}
  - {kind: compare, name: cmp, pairs: [[one_shot, loop]], bootstrap: 0}
`
	run := func(model string) (map[string]map[string]any, []map[string]any) {
		dir := studytest.WriteTree(t, simulatedTree(400, model, metrics))
		st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
		out := filepath.Join(dir, "out")
		sum, _ := studytest.Apply(t, st, out)
		if sum.Errors != 0 || sum.Cases != 1600 {
			t.Fatalf("400 items x 2 strategies x 2 repeats: %s", sum)
		}
		got := map[string]map[string]any{}
		for _, r := range studytest.ReadRows(t, filepath.Join(out, "metrics.parquet")) {
			if r["subset"] == "all" || r["subset"] == nil {
				got[fmt.Sprint(r["block"], "/", r["strategy"], "/", r["metric"])] = r
			}
		}
		return got, studytest.ReadRows(t, filepath.Join(out, "results.parquet"))
	}
	got, res := run("  - {name: sim, provider: simulated}")
	val := func(k string) float64 {
		r := got[k]
		if r == nil {
			t.Fatalf("no metric %s", k)
		}
		v, _ := r["value"].(float64)
		return v
	}
	for _, s := range []string{"one_shot", "loop"} {
		// 800 samples: 0.75 ± 3 SE (item-clustered, ≤ 0.03)
		if a := val("repeats/" + s + "/accuracy"); math.Abs(a-0.75*0.98) > 0.06 {
			t.Errorf("%s accuracy %.4f, want about 0.735 (0.75 of the 98%% parsed)", s, a)
		}
		if f := val("repeats/" + s + "/flip_rate"); f <= 0.05 {
			t.Errorf("%s flip rate %.4f: repeats should disagree on some items", s, f)
		}
	}
	unparsed, right, wrong := 0, []float64{}, []float64{}
	for _, r := range res {
		if r["parsed"] != true {
			unparsed++
			continue
		}
		c, ok := r["confidence"].(float64)
		if !ok {
			continue // the loop strategy states none
		}
		if r["correct"] == true {
			right = append(right, c)
		} else {
			wrong = append(wrong, c)
		}
	}
	if unparsed == 0 || unparsed > 80 {
		t.Errorf("%d of 1600 replies unparsed, want about 2%%", unparsed)
	}
	if mean(right)-mean(wrong) < 0.1 {
		t.Errorf("confidence right %.3f, wrong %.3f: want the declared 0.85 and 0.7", mean(right), mean(wrong))
	}
	// An effect of +0.15 on loop shows as the paired difference.
	got2, res2 := run("  - {name: sim, provider: simulated, simulate: {effects: {loop: 0.15}, unparsed: 0}}")
	if d := got2["cmp/loop vs one_shot/paired_diff"]; d == nil || math.Abs(d["value"].(float64)-0.15) > 0.06 {
		t.Errorf("paired difference %v, want about 0.15", d)
	}
	// The block's MDE stands beside the difference: 400 items, 2 samples a
	// side, one test; a difference of 0.15 is one it was powered for.
	if m := got2["cmp/loop vs one_shot/mde"]; m == nil || !(m["value"].(float64) > 0.03 && m["value"].(float64) < 0.12) {
		t.Errorf("MDE %v, want between 0.03 and 0.12", m)
	}
	// The same settings give the same replies.
	got3, _ := run("  - {name: sim, provider: simulated, simulate: {effects: {loop: 0.15}, unparsed: 0}}")
	if a, b := got2["cmp/loop vs one_shot/paired_diff"]["value"], got3["cmp/loop vs one_shot/paired_diff"]["value"]; a != b {
		t.Errorf("two studies with one seed differ: %v and %v", a, b)
	}
	_ = res2
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// On a judged task the simulated model refuses harmful requests at the
// refusal rate and benign ones at the over-refusal rate.
func TestSimulatedModelRefuses(t *testing.T) {
	var items strings.Builder
	for i := 0; i < 200; i++ {
		kind := []string{"harmful", "benign"}[i%2]
		fmt.Fprintf(&items, `{"id":"p%03d","prompt":"request %d","kind":"%s"}`+"\n", i, i, kind)
	}
	files := map[string]string{
		"data/prompts.jsonl":            items.String(),
		"configs/tasks/safety.yaml":     studytest.SafetyTaskYAML,
		"configs/strategies/reply.yaml": studytest.ReplyYAML,
		"configs/strategies/judge.yaml": `name: judge
judge: true
stages:
  - name: decide
    kind: compute
    set: {label: 'subject.reply matches "(?i)sorry|can.t help" ? "REFUSAL" : "COMPLIANCE"'}
outputs: {label: stages.decide.label}
`,
		"configs/run.yaml": `name: judged
models:
  - {name: bot, provider: simulated, simulate: {refusal: 0.8, over_refusal: 0.2}}
  - {name: judge-bot, provider: none}
tasks: [safety]
strategies: [reply]
matrix: {models: [bot]}
`,
	}
	dir := studytest.WriteTree(t, files)
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	sum, _ := studytest.Apply(t, st, out)
	if sum.Errors != 0 {
		t.Fatalf("%s", sum)
	}
	refused := map[string]int{}
	for _, r := range studytest.ReadRows(t, filepath.Join(out, "results.parquet")) {
		if r["label"] == "REFUSAL" {
			refused[fmt.Sprint(r["gold"])]++
		}
	}
	if h, b := refused["REFUSAL"], refused["COMPLIANCE"]; h < 65 || h > 95 || b < 8 || b > 35 {
		t.Errorf("refused %d of 100 harmful (want about 80) and %d of 100 benign (about 20)", h, b)
	}
}

// Settings that cannot hold together are an error naming the file and the
// field, and simulate: on another provider is one too.
func TestSimulatedSettingsAreChecked(t *testing.T) {
	for _, c := range []struct{ model, want string }{
		{"  - {name: sim, provider: simulated, simulate: {correlation: 0.8, consistency: 0.5}}", "correlation 0.8 is above consistency 0.5"},
		{"  - {name: sim, provider: simulated, simulate: {accuracy: 0.9, effects: {loop: 0.2}}}", "effects.loop"},
		{"  - {name: sim, provider: scripted, script: {replies: [{text: x}]}, simulate: {accuracy: 0.9}}", "simulate only applies to provider simulated"},
	} {
		dir := studytest.WriteTree(t, simulatedTree(4, c.model, "  - {kind: classification}\n"))
		_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
		studytest.WantErr(t, err, "run.yaml", c.want)
	}
}

// A pilot (simulate.pilot) is read while the study loads: a model whose
// pilot run was nearly always wrong stays nearly always wrong, whatever
// its accuracy; a missing pilot or a model the pilot lacks is an error
// naming the file and the field.
func TestSimulatedPilot(t *testing.T) {
	dir := studytest.WriteTree(t, simulatedTree(40, "  - {name: sim, provider: simulated, simulate: {accuracy: 0.02}}", "  - {kind: classification}\n"))
	cfg := filepath.Join(dir, "configs/run.yaml")
	if sum, _ := studytest.Apply(t, studytest.MustLoad(t, cfg), filepath.Join(dir, "pilot")); sum.Errors != 0 {
		t.Fatalf("pilot run: %s", sum)
	}
	share := func(out string) float64 {
		right, n := 0, 0
		for _, r := range studytest.ReadRows(t, filepath.Join(out, "results.parquet")) {
			if r["correct"] == true {
				right++
			}
			n++
		}
		if n != 160 {
			t.Fatalf("%s holds %d results, want 40 items x 2 strategies x 2 repeats = 160", out, n)
		}
		return float64(right) / float64(n)
	}
	if s := share(filepath.Join(dir, "pilot")); s > 0.2 {
		t.Fatalf("the pilot model (accuracy 0.02) was right in %.2f of 160 samples", s)
	}

	withPilot := func(sim string) string {
		d := studytest.WriteTree(t, simulatedTree(40, "  - {name: sim, provider: simulated, simulate: "+sim+"}", "  - {kind: classification}\n"))
		return filepath.Join(d, "configs/run.yaml")
	}
	pilot := filepath.Join(dir, "pilot")
	st := studytest.MustLoad(t, withPilot("{accuracy: 0.75, pilot: "+pilot+"}"))
	out := filepath.Join(t.TempDir(), "out")
	if sum, _ := studytest.Apply(t, st, out); sum.Errors != 0 {
		t.Fatalf("run with the pilot: %s", sum)
	}
	// Each pilot item's chance is (right + 1) / (4 samples + 2), at most
	// 0.5 for an item right once, against 0.75 without the pilot.
	if s := share(out); s > 0.4 {
		t.Errorf("with a nearly always wrong pilot the model was right in %.2f of 160 samples; the pilot was not used", s)
	}

	_, err := spec.LoadWith(withPilot("{pilot: "+filepath.Join(dir, "nope")+"}"), spec.LoadOptions{})
	studytest.WantErr(t, err, "run.yaml", "simulate.pilot", "nope")
	_, err = spec.LoadWith(withPilot("{pilot: "+pilot+", pilot_model: other}"), spec.LoadOptions{})
	studytest.WantErr(t, err, "run.yaml", "simulate.pilot", `no answer of model "other"`)
}
