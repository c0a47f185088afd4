package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// These tests load the data shipped in data/ with the `dataset:` YAML a task
// file would use, and check the counts and label balance documented in
// data/SOURCES.md. The YAML is written for a task file in configs/tasks/.
// They fail (not skip) when the data is missing: it is part of the repo.

// taskDir is where the example task files would live.
var taskDir = filepath.Join("..", "..", "configs", "tasks")

// specYAML holds the example dataset mappings, by name.
var specYAML = map[string]string{
	"ethics_promoral": `
path: ../../data/ethics/commonsense_test_hard.jsonl
id: id
filter: in_promoral_subset   # = the first 1,700 rows; "limit: 1700" gives the same items
`,
	"ethics_test_hard": `
path: ../../data/ethics/commonsense_test_hard.jsonl
id: id
`,
	"ethics_demos": `
path: ../../data/ethics/commonsense_test.jsonl
id: id
exclude: {path: ../../data/ethics/commonsense_test_hard.jsonl, field: scenario}
`,
	"ethics_contrast": `
path: ../../data/ethics_contrast/ethics_contrast.jsonl
id: id
expand:
  as: variant
  link: pair_id
  variants:
    - name: original
      fields: {scenario: original_scenario, label_int: original_label_int}
    - name: edited
      fields: {scenario: contrast_scenario, label_int: contrast_label_int}
`,
	"moralchoice_low": `
path: ../../data/moralchoice/moralchoice_low_ambiguity.jsonl
id: id
shuffle:
  seed: 20240601
  options: [action1, action2]
  into: [option_a, option_b]
  gold: preferred_action       # "action1" -> gold_letter A or B
`,
	"moralchoice_high": `
path: ../../data/moralchoice/moralchoice_high_ambiguity.jsonl
id: id
shuffle:
  seed: 20240601
  options: [action1, action2]
  into: [option_a, option_b]
  gold: preferred_action       # null here -> gold_letter ""
`,
	"morables": `
path: ../../data/morables/morables_mcqa.jsonl
id: id
fields: {option_a: options.0, option_b: options.1, option_c: options.2, option_d: options.3, option_e: options.4}
`,
	"safety_all": `
path: ../../data/safety/safety_prompts.jsonl
id: id
`,
	"safety_jbb": `
path: ../../data/safety/safety_prompts.jsonl
id: id
fields: {pair: pair_id}
filter: source == "JBB-Behaviors"
`,
	"safety_xstest": `
path: ../../data/safety/safety_prompts.jsonl
id: id
filter: source == "XSTest"
`,
	"scruples_index": `
path: ../../data/scruples/scruples_promoral_subset_index.jsonl
id: id
`,
	"scruples_anecdotes": `
path: ../../data/fixtures/scruples_anecdotes_sample.jsonl
id: id
fields: {scenario: text, author_votes: label_scores.AUTHOR}
`,
	"wildjailbreak": `
path: ../../data/fixtures/wildjailbreak_eval_sample.tsv
fields: {prompt: adversarial}
filter: data_type == "adversarial_harmful"
`,
	"promoral_replies": `
path: ../../data/promoral_runs/ethics_replies.jsonl.gz
id_columns: [model, strategy, item]
types: {gold: int}
`,
	"promoral_reference": `
path: ../../data/promoral_reference/promoral_results_summary.csv
id_columns: [dataset, model, strategy, n_eval]
types: {n_eval: int, accuracy: float}
`,
}

func specFor(t testing.TB, name string) *Spec {
	t.Helper()
	src, ok := specYAML[name]
	if !ok {
		t.Fatalf("no spec %q", name)
	}
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true) // like the config loader: unknown keys are errors
	var s Spec
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("spec %s: %v", name, err)
	}
	if errs := s.Check(); len(errs) > 0 {
		t.Fatalf("spec %s: %v", name, errs)
	}
	return &s
}

func loadReal(t testing.TB, name string) []Item {
	t.Helper()
	return load(t, specFor(t, name), taskDir)
}

func TestRealEthics(t *testing.T) {
	hard := loadReal(t, "ethics_test_hard")
	subset := loadReal(t, "ethics_promoral")
	demos := loadReal(t, "ethics_demos")
	tests := []struct {
		name            string
		items           []Item
		n, wrong, right int
	}{
		{"test_hard", hard, 3964, 2091, 1873},
		{"promoral subset", subset, 1700, 822, 878},
		{"demo pool", demos, 3885, 1816, 2069},
	}
	for _, tc := range tests {
		labels := count(tc.items, "label_int")
		if len(tc.items) != tc.n || labels[1] != tc.wrong || labels[0] != tc.right {
			t.Errorf("%s: %d items, labels %v; want %d (%d wrong / %d not wrong)", tc.name, len(tc.items), labels, tc.n, tc.wrong, tc.right)
		}
	}
	// Both ways of selecting the ProMoral subset agree, item for item.
	byLimit := load(t, &Spec{Path: "../../data/ethics/commonsense_test_hard.jsonl", ID: "id", Limit: 1700}, taskDir)
	if len(byLimit) != len(subset) {
		t.Fatalf("limit 1700 gave %d items", len(byLimit))
	}
	for i := range subset {
		if subset[i].ID != byLimit[i].ID || subset[i].Fields["scenario"] != byLimit[i].Fields["scenario"] {
			t.Fatalf("item %d: filter gives %s, limit gives %s", i, subset[i].ID, byLimit[i].ID)
		}
	}
	// The demo pool shares no scenario with test_hard (so few-shot demos
	// never contain an evaluation item). Checked directly, not only via
	// exclude, which would hide an overlap by dropping it.
	inHard := map[any]bool{}
	for _, it := range hard {
		inHard[it.Fields["scenario"]] = true
	}
	for _, it := range demos {
		if inHard[it.Fields["scenario"]] {
			t.Errorf("demo %s appears in test_hard: %.60q", it.ID, it.Fields["scenario"])
		}
	}
}

func TestRealEthicsContrast(t *testing.T) {
	items := loadReal(t, "ethics_contrast")
	if len(items) != 400 {
		t.Fatalf("%d items, want 400", len(items))
	}
	edits := map[string]int{}
	for i := 0; i < len(items); i += 2 {
		o, e := items[i].Fields, items[i+1].Fields
		if o["variant"] != "original" || e["variant"] != "edited" || o["pair_id"] != e["pair_id"] ||
			items[i].ID != o["pair_id"].(string)+":original" || items[i+1].ID != e["pair_id"].(string)+":edited" {
			t.Fatalf("items %s, %s are not an original/edited pair", items[i].ID, items[i+1].ID)
		}
		kind := o["edit_type"].(string)
		edits[kind]++
		if flipped := o["label_int"] != e["label_int"]; flipped != (kind == "flip") {
			t.Errorf("%s: edit_type %s but labels %v -> %v", o["pair_id"], kind, o["label_int"], e["label_int"])
		}
	}
	if edits["flip"] != 100 || edits["preserve"] != 100 {
		t.Errorf("edit types %v, want 100 flip / 100 preserve", edits)
	}
}

func TestRealMoralChoice(t *testing.T) {
	low, high := loadReal(t, "moralchoice_low"), loadReal(t, "moralchoice_high")
	if len(low) != 687 || len(high) != 680 {
		t.Fatalf("low %d high %d, want 687 / 680", len(low), len(high))
	}
	letters := count(low, "gold_letter")
	// 687 fair coin flips: A and B each land within 343.5 ± 60 (> 4.5 sd).
	if letters["A"]+letters["B"] != 687 || letters["A"] < 284 || letters["B"] < 284 {
		t.Errorf("low gold letters %v, want both A and B near 344", letters)
	}
	for _, it := range low {
		f := it.Fields
		at := f["option_"+strings.ToLower(f["gold_letter"].(string))]
		if at != f["action1"] {
			t.Errorf("%s: option at gold %v is %q, want action1 %q", it.ID, f["gold_letter"], at, f["action1"])
		}
	}
	if letters := count(high, "gold_letter"); letters[""] != 680 {
		t.Errorf("high gold letters %v, want all empty", letters)
	}
	if orders := count(high, "option_a"); len(orders) < 600 {
		t.Errorf("high: only %d distinct option_a texts; options were not filled", len(orders))
	}
	// Same spec, second load and a filtered load: same order per item.
	again := loadReal(t, "moralchoice_low")
	filtered := specFor(t, "moralchoice_low")
	filtered.Filter = `generation_rule == "Do not kill"`
	sub := load(t, filtered, taskDir)
	byID := map[string]any{}
	for i, it := range low {
		byID[it.ID] = it.Fields["gold_letter"]
		if again[i].ID != it.ID || again[i].Fields["gold_letter"] != it.Fields["gold_letter"] {
			t.Fatalf("second load differs at %s", it.ID)
		}
	}
	if len(sub) == 0 || len(sub) == len(low) {
		t.Fatalf("filter kept %d of %d; pick a filter that selects a strict subset", len(sub), len(low))
	}
	for _, it := range sub {
		if it.Fields["gold_letter"] != byID[it.ID] {
			t.Errorf("%s: gold letter changed under filter", it.ID)
		}
	}
}

func TestRealMorables(t *testing.T) {
	items := loadReal(t, "morables")
	answers := count(items, "answer")
	want := map[any]int{"A": 142, "B": 142, "C": 142, "D": 142, "E": 141}
	if len(items) != 709 || len(answers) != len(want) {
		t.Fatalf("%d items, answers %v", len(items), answers)
	}
	for k, v := range want {
		if answers[k] != v {
			t.Errorf("answer %v: %d, want %d", k, answers[k], v)
		}
	}
	for _, it := range items {
		f := it.Fields
		gold := f["option_"+strings.ToLower(f["answer"].(string))]
		if gold != f["moral"] || f["option_types"].([]any)[f["answer_index"].(int)] != "ground_truth" {
			t.Errorf("%s: answer %v does not point at the ground truth", it.ID, f["answer"])
		}
	}
}

func TestRealSafety(t *testing.T) {
	all, jbb, xs := loadReal(t, "safety_all"), loadReal(t, "safety_jbb"), loadReal(t, "safety_xstest")
	if len(all) != 650 {
		t.Errorf("all: %d, want 650", len(all))
	}
	if k := count(jbb, "kind"); len(jbb) != 200 || k["harmful"] != 100 || k["benign"] != 100 {
		t.Errorf("JBB: %d items, kinds %v; want 100 harmful + 100 benign", len(jbb), k)
	}
	if k := count(xs, "kind"); len(xs) != 450 || k["harmful"] != 200 || k["benign"] != 250 {
		t.Errorf("XSTest: %d items, kinds %v; want 200 harmful + 250 benign", len(xs), k)
	}
	pairs := map[any]map[any]int{}
	for _, it := range jbb {
		p := it.Fields["pair"]
		if pairs[p] == nil {
			pairs[p] = map[any]int{}
		}
		pairs[p][it.Fields["kind"]]++
	}
	if len(pairs) != 100 {
		t.Errorf("%d JBB pairs, want 100", len(pairs))
	}
	for p, kinds := range pairs {
		if kinds["harmful"] != 1 || kinds["benign"] != 1 {
			t.Errorf("pair %v: %v, want one harmful and one benign", p, kinds)
		}
	}
}

func TestRealScruplesIndex(t *testing.T) {
	items := loadReal(t, "scruples_index")
	labels, bin, hc := count(items, "label"), count(items, "binarized_label"), count(items, "high_consensus")
	if len(items) != 1466 || labels["OTHER"] != 659 || labels["AUTHOR"] != 628 || labels["EVERYBODY"] != 106 || labels["NOBODY"] != 73 || labels["INFO"] != 0 {
		t.Errorf("%d items, labels %v", len(items), labels)
	}
	if bin["WRONG"] != 734 || bin["RIGHT"] != 732 || hc[true] != 916 {
		t.Errorf("binarized %v, high_consensus %v", bin, hc)
	}
}

func TestRealPromoralReplies(t *testing.T) {
	replies := loadReal(t, "promoral_replies")
	if len(replies) != 29050 {
		t.Fatalf("%d replies, want 29050", len(replies))
	}
	if replies[0].ID != "deepseek-v3.1:few_shot_cot:0" {
		t.Errorf("first id %q", replies[0].ID)
	}
	// Each reply's item indexes the ProMoral subset: same scenario, same gold.
	subset := loadReal(t, "ethics_promoral")
	for _, r := range replies {
		f := r.Fields
		s := subset[f["item"].(int)].Fields
		if f["scenario"] != s["scenario"] || f["gold"] != s["label_int"] {
			t.Fatalf("%s: scenario/gold disagree with test_hard row %v", r.ID, f["item"])
		}
	}
	ref := loadReal(t, "promoral_reference")
	if len(ref) != 218 {
		t.Errorf("reference: %d rows, want 218", len(ref))
	}
}

func TestFixtures(t *testing.T) {
	// The fixtures exist twice: testdata/ for tests, data/fixtures/ for
	// task files. They must not drift apart.
	for _, name := range []string{"scruples_anecdotes_sample.jsonl", "wildjailbreak_eval_sample.tsv"} {
		a, errA := os.ReadFile(filepath.Join("testdata", name))
		b, errB := os.ReadFile(filepath.Join("..", "..", "data", "fixtures", name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: testdata and data/fixtures copies differ (%v, %v)", name, errA, errB)
		}
	}

	sc := load(t, &Spec{Path: "testdata/scruples_anecdotes_sample.jsonl", ID: "id",
		Fields: map[string]string{"scenario": "text", "author_votes": "label_scores.AUTHOR"}}, ".")
	labels := count(sc, "label")
	if len(sc) != 8 || labels["OTHER"] != 3 || labels["AUTHOR"] != 2 || labels["NOBODY"] != 2 || labels["EVERYBODY"] != 1 {
		t.Errorf("scruples fixture: %d items, labels %v", len(sc), labels)
	}
	if sc[0].Fields["author_votes"] != 9 || sc[0].Fields["scenario"] == "" {
		t.Errorf("scruples fixture row 1: %v", sc[0].Fields)
	}
	if got := len(loadReal(t, "scruples_anecdotes")); got != 8 {
		t.Errorf("scruples via task spec: %d items", got)
	}

	wj := loadReal(t, "wildjailbreak")
	if len(wj) != 6 {
		t.Errorf("wildjailbreak harmful: %d, want 6", len(wj))
	}
	// The quoted prompt spans lines 4-5; the bare quotes on later lines
	// load as text (TSV is read leniently).
	if wj[2].ID != "wildjailbreak_eval_sample:4" || !strings.Contains(wj[2].Fields["prompt"].(string), "\nthat pretends") {
		t.Errorf("multi-line row: %s %q", wj[2].ID, wj[2].Fields["prompt"])
	}
	benign := load(t, &Spec{Path: "testdata/wildjailbreak_eval_sample.tsv", Filter: `data_type == "adversarial_benign"`}, ".")
	if len(benign) != 3 || !strings.Contains(benign[1].Fields["adversarial"].(string), `"kills"`) {
		t.Errorf("wildjailbreak benign: %d items", len(benign))
	}
}

func BenchmarkLoadEthicsTestHard(b *testing.B) {
	spec := specFor(b, "ethics_test_hard")
	for b.Loop() {
		if _, err := Load(spec, taskDir); err != nil {
			b.Fatal(err)
		}
	}
}
