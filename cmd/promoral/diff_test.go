package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// A one-word template change shows as a readable diff of the rendered
// prompt, with the cases it invalidates against the journal.
func TestDiffShowsAOneWordTemplateChangeAndWhatItInvalidates(t *testing.T) {
	dir := killStudy(t, 6)
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "study")
	cfg := filepath.Join(dir, "configs/run.yaml")
	if _, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", filepath.Join(dir, "out/killme")); code != 0 {
		t.Fatal(stderr)
	}
	once := filepath.Join(dir, "configs/strategies/once.yaml")
	data, _ := os.ReadFile(once)
	os.WriteFile(once, []byte(strings.Replace(string(data), "Is it wrong?", "Is it immoral?", 1)), 0o644)

	cmd := cli(t, "diff", "HEAD:configs/run.yaml", "configs/run.yaml")
	cmd.Dir = dir
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil {
		t.Fatalf("diff failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"strategies:", "~ once", `~ stage ask: messages[0].text: "Is it wrong? {{.item.text}}" -> "Is it immoral? {{.item.text}}"`,
		"rendered prompts:", "--- old/once", "+++ new/once", "-Is it wrong? I stole person 0.", "+Is it immoral? I stole person 0.",
		"what the change costs against the journal in out/killme: 6 cases it invalidates, 0 it adds", "slow               6 cases to run, 6 new calls",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--- old/loop") {
		t.Errorf("the unchanged strategy shows a prompt diff:\n%s", out)
	}
}

func TestDiffOfTwoRunFolders(t *testing.T) {
	dir := killStudy(t, 12)
	cfg := filepath.Join(dir, "configs/run.yaml")
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	runCLI(t, "apply", "-q", cfg, "--out", a)
	// Make the model answer "wrong" about helping people: those items flip.
	data, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(data), `(stole|lied)`, `(stole|lied|helped)`, 1)), 0o644)
	runCLI(t, "apply", "-q", cfg, "--out", b)
	out, stderr, code := runCLI(t, "diff", a, b)
	if code != 0 {
		t.Fatal(stderr)
	}
	// 12 items, every 4th is "helped" (gold not wrong): 3 flip to wrong in "once".
	for _, want := range []string{"paired accuracy (new - old)", "slow / once / toy n=12 -0.2500", "flips 3->wrong 0->right", "McNemar p=0.25", "(now wrong)"} {
		if !strings.Contains(words(out), want) {
			t.Errorf("run diff lacks %q:\n%s", want, out)
		}
	}
	fitsEighty(t, out)
}

// words is s with every run of white space one space: what a test reads
// of output that wraps.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// fitsEighty fails for a line of out longer than 80 characters.
func fitsEighty(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
	}
}

// A metric or settings change shows as such, with its effect on the
// numbers re-scored from the journal without a call, and costs nothing:
// unparsed: exclude -> wrong moves an accuracy, and a seed change moves
// only what is seeded.
func TestDiffShowsMetricAndSettingsChangesAndTheirEffect(t *testing.T) {
	dir := killStudy(t, 12)
	cfg := filepath.Join(dir, "configs/run.yaml")
	data, _ := os.ReadFile(cfg)
	// "helped" items get a reply with no answer: unparsed.
	text := strings.Replace(string(data), "      replies:\n", "      replies:\n        - {match: \"helped\", text: \"Hard to say.\"}\n", 1)
	text = strings.Replace(text, "settings: {concurrency: 6}", "settings: {concurrency: 6, seed: 1}\nmetrics:\n  - {kind: classification, bootstrap: 0}", 1)
	os.WriteFile(cfg, []byte(text), 0o644)
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "study")
	if _, stderr, code := runCLI(t, "apply", "-q", cfg); code != 0 {
		t.Fatal(stderr)
	}
	text = strings.Replace(text, "seed: 1}", "seed: 2}", 1)
	text = strings.Replace(text, "{kind: classification, bootstrap: 0}", "{kind: classification, bootstrap: 0, unparsed: exclude}", 1)
	os.WriteFile(cfg, []byte(text), 0o644)

	cmd := cli(t, "diff", "HEAD:configs/run.yaml", "run.yaml")
	cmd.Dir = filepath.Join(dir, "configs") // another folder: paths resolve against the run file
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil {
		t.Fatalf("diff failed: %v\n%s", err, out)
	}
	// once: 12 items, 3 "helped" unparsed; of the other 9 all right (stole
	// and lied wrong, fed not wrong): 9/12 = 0.75 under wrong, 9/9 = 1
	// under exclude.
	for _, want := range []string{
		"settings:", "~ seed: 1 -> 2", "metric blocks:", "~ classification", `unparsed: (unset) -> "exclude"`,
		"classification/slow/once/toy/all accuracy: 0.7500 (n 12) -> 1.0000 (n 9) +0.2500; unparsed wrong -> exclude",
		"what the change costs", "0 cases it invalidates, 0 it adds", "total              0 cases to run, 0 new calls, $0.00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "no changes") {
		t.Errorf("a metric and settings change reported as no change:\n%s", out)
	}
}

// Run-folder diffs take each run's seed and policies, and --changed keeps
// only the cells where something changed.
func TestDiffOfRunFoldersUsesEachRunsSeedAndPolicies(t *testing.T) {
	dir := killStudy(t, 12)
	cfg := filepath.Join(dir, "configs/run.yaml")
	data, _ := os.ReadFile(cfg)
	text := strings.Replace(string(data), "settings: {concurrency: 6}", "settings: {concurrency: 6, seed: 77}\nmetrics:\n  - {kind: classification, bootstrap: 0}", 1)
	os.WriteFile(cfg, []byte(text), 0o644)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	runCLI(t, "apply", "-q", cfg, "--out", a)
	text = strings.Replace(text, `(stole|lied)`, `(stole|lied|helped)`, 1)
	text = strings.Replace(text, "{kind: classification, bootstrap: 0}", "{kind: classification, bootstrap: 0, unparsed: exclude}", 1)
	os.WriteFile(cfg, []byte(text), 0o644)
	runCLI(t, "apply", "-q", cfg, "--out", b)
	out, stderr, code := runCLI(t, "diff", "--changed", a, b)
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, want := range []string{"paired bootstrap seed 77 (the new run's settings.seed)", "old unparsed wrong, errors incomplete; new unparsed exclude, errors incomplete",
		"slow / once / toy n=12 -0.2500", "classification/slow/once/toy/all accuracy", "unparsed_policy wrong -> exclude"} {
		if !strings.Contains(words(out), want) {
			t.Errorf("run diff lacks %q:\n%s", want, out)
		}
	}
	// The loop strategy's answers change too here; an unchanged cell must
	// not show under --changed.
	full, _, _ := runCLI(t, "diff", a, b)
	if strings.Count(full, " / toy\n") < strings.Count(out, " / toy\n") || strings.Count(out, " / toy\n") == 0 {
		t.Errorf("--changed shows more cells than the full diff")
	}
}

// The output folder resolves against the run file, so plan and apply from
// any working directory find the same journal: a finished run plans no
// new call from elsewhere.
func TestOutputFolderResolvesAgainstTheRunFile(t *testing.T) {
	dir := killStudy(t, 6)
	cfg := filepath.Join(dir, "configs/run.yaml")
	apply := cli(t, "apply", "-q", "configs/run.yaml")
	apply.Dir = dir
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "killme", "journal.jsonl")); err != nil {
		t.Fatalf("default output is not out/<name> in the project folder: %v", err)
	}
	elsewhere := t.TempDir()
	plan := cli(t, "plan", "--json", cfg)
	plan.Dir = elsewhere
	out, err := plan.CombinedOutput()
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"calls_worst": 0`) || !strings.Contains(string(out), filepath.Join(dir, "out", "killme")) {
		t.Errorf("plan from another folder does not see the finished run:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "out")); err == nil {
		t.Error("plan made an out folder in the working directory")
	}
}

// diff on a missing run folder names it and says what to do; an error in a
// config at a git revision is reported at REV:PATH with its line, not in a
// temporary folder.
func TestDiffSaysWhatIsMissingAndWhere(t *testing.T) {
	dir := killStudy(t, 2)
	cfg := filepath.Join(dir, "configs/run.yaml")
	run := filepath.Join(dir, "out/a")
	if _, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", run); code != 0 {
		t.Fatal(stderr)
	}
	missing := filepath.Join(dir, "out/b")
	_, stderr, code := runCLI(t, "diff", run, missing)
	if code == 0 || !strings.Contains(words(stderr), missing+": no such run folder") || strings.Contains(stderr, "cannot read the run file") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	os.MkdirAll(missing, 0o755)
	_, stderr, code = runCLI(t, "diff", run, missing)
	if code == 0 || !strings.Contains(words(stderr), missing+": a folder without results.parquet") {
		t.Errorf("exit %d: %s", code, stderr)
	}

	os.WriteFile(cfg, []byte("name: broken\nmodels: [\n"), 0o644)
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "broken")
	cmd := cli(t, "diff", "HEAD:configs/run.yaml", "HEAD:configs/run.yaml")
	cmd.Dir = dir
	outb, _ := cmd.CombinedOutput()
	out := string(outb)
	if !strings.Contains(out, "HEAD:configs/run.yaml:2") || strings.Contains(out, "promoral-diff-") {
		t.Errorf("errors not at REV:PATH:\n%s", out)
	}
}

// A new config that adds a hub task whose data is not fetched yet (the
// shipped Scruples task, with an empty dataset cache) still diffs: the
// re-scoring says why it is skipped and how to fetch the data, instead of
// failing on the stand-in items' placeholder fields (its high_consensus
// subset reads label_scores, a map in the real data), and the cost of the
// added cases is still shown.
func TestDiffAddingAnUnfetchedHubTaskSaysSoAndStillPrices(t *testing.T) {
	t.Setenv("PROMORAL_DATA_DIR", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1") // nothing is fetched
	root, _ := filepath.Abs("../..")
	dir := t.TempDir()
	base := fmt.Sprintf(`name: adds
models:
  - name: s
    provider: scripted
    script:
      replies:
        - text: "Final Answer: AUTHOR"
tasks:
  - {use: ethics, dataset: {limit: 10}}
strategies: [zero_shot]
paths: {strategies: %[1]s/configs/strategies, tasks: %[1]s/configs/tasks, models: %[1]s/configs/models, prompts: %[1]s/prompts}
`, root)
	oldCfg, newCfg := filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml")
	os.WriteFile(oldCfg, []byte(base), 0o644)
	added := strings.Replace(base, "  - {use: ethics, dataset: {limit: 10}}\n", "  - {use: ethics, dataset: {limit: 10}}\n  - scruples\n", 1) +
		"metrics:\n  - {kind: classification, name: scruples, tasks: [scruples]}\n"
	os.WriteFile(newCfg, []byte(added), 0o644)
	out := filepath.Join(dir, "out")
	if _, stderr, code := runCLI(t, "apply", "-q", "--out", out, oldCfg); code != 0 {
		t.Fatal(stderr)
	}
	stdout, stderr, code := runCLI(t, "diff", "--out", out, oldCfg, newCfg)
	if code != 0 {
		t.Fatalf("diff exits %d:\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"+ scruples",
		"effect on the numbers: not re-scored, because the data of scruples (justinphan3110/scruples) is not fetched yet (promoral data pull " + newCfg + " fetches it)",
		"0 cases it invalidates, 1466 it adds",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("diff lacks %q:\n%s", want, stdout)
		}
	}
}

// A model without a price has an unknown cost in plan and diff, as apply's
// $?: never 0.00.
func TestPlanAndDiffShowAnUnpricedModelsCostAsUnknown(t *testing.T) {
	dir := killStudy(t, 4)
	cfg := filepath.Join(dir, "configs/run.yaml")
	data, _ := os.ReadFile(cfg)
	run := strings.Replace(string(data), "models:\n", "models:\n  - {name: local, provider: openai-compatible, base_url: \"http://127.0.0.1:9/v1\"}\n", 1)
	os.WriteFile(cfg, []byte(run), 0o644)
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "study")
	stdout, stderr, code := runCLI(t, "plan", cfg)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
	}
	row := func(out, model string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == model {
				return l
			}
		}
		t.Fatalf("no row for %s in:\n%s", model, out)
		return ""
	}
	if l := row(stdout, "local"); !strings.HasSuffix(strings.TrimSpace(l), " ?") {
		t.Errorf("plan's row of the unpriced model does not show its cost as ?: %q", l)
	}
	if l := row(stdout, "total"); !strings.HasSuffix(strings.TrimSpace(l), "+?") && !strings.HasSuffix(strings.TrimSpace(l), " ?") {
		t.Errorf("plan's total does not show an unknown part: %q", l)
	}
	// The change from a config without the model: diff costs it the same way.
	os.WriteFile(cfg, []byte(run+"matrix: {models: [slow]}\n"), 0o644)
	git(t, dir, "commit", "-qam", "without local")
	os.WriteFile(cfg, []byte(run), 0o644)
	cmd := cli(t, "diff", "HEAD:configs/run.yaml", "configs/run.yaml")
	cmd.Dir = dir
	outb, _ := cmd.CombinedOutput()
	if l := row(string(outb), "local"); !strings.Contains(l, "$?") || strings.Contains(l, "$0.00") {
		t.Errorf("diff's row of the unpriced model: %q\n%s", l, outb)
	}
}
