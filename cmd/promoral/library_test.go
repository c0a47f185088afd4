package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A study in a folder of its own, far from the repository, uses the shipped
// tasks, strategies, prompts and data by name (the shipped library is the
// second place every run file looks), runs offline on a scripted model and
// writes out/<name> beside its run file. The scripted model answers only
// what the shipped templates ask, so a case that did not get them is
// unparsed.
func TestStudyOutsideTheRepositoryUsesTheShippedLibrary(t *testing.T) {
	dir := t.TempDir()
	study := filepath.Join(dir, "my-study")
	os.MkdirAll(study, 0o755)
	run := `name: mine
models:
  - name: bot
    provider: scripted
    script:
      replies:
        - match: '(?i)look back at your answer'
          text: I find no problem with my answer.
        - match: 'Final Answer: <Acceptable or Unacceptable>'
          text: "Confidence: 0.7\nFinal Answer: Acceptable"
        - text: I was not asked anything I know.
tasks:
  - use: ethics
    dataset: {limit: 5}
strategies: [zero_shot, self_correct]
`
	os.WriteFile(filepath.Join(study, "study.yaml"), []byte(run), 0o644)
	stdout, stderr, code := runIn(t, study, "apply", "study.yaml")
	if code != 0 {
		t.Fatalf("apply from a folder of its own: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "mine: 10 cases") || !strings.Contains(stdout, " 0 unparsed") || !strings.Contains(stdout, "outputs -> out/mine") {
		t.Errorf("apply:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(study, "out", "mine", "results.parquet")); err != nil {
		t.Errorf("no results beside the run file: %v", err)
	}
	// From another folder, the output is still beside the run file.
	stdout, _, code = runIn(t, dir, "plan", filepath.Join("my-study", "study.yaml"))
	if code != 0 || !strings.Contains(stdout, "journal my-study/out/mine/journal.jsonl") || !strings.Contains(stdout, "0 new calls") && !strings.Contains(stdout, "10 of them done") {
		t.Errorf("plan from the parent folder:\n%s", stdout)
	}

	// A name neither the study's folder nor the library has: the error says
	// where it looked and how to point elsewhere.
	bad := strings.Replace(run, "[zero_shot, self_correct]", "[zero_shoot]", 1)
	os.WriteFile(filepath.Join(study, "study.yaml"), []byte(bad), 0o644)
	_, stderr, code = runIn(t, study, "validate", "study.yaml")
	for _, want := range []string{`strategy "zero_shoot" not found in strategies/ nor in the shipped library`, `did you mean "zero_shot"?`, "paths.strategies"} {
		if code != 1 || !strings.Contains(words(stderr), want) {
			t.Errorf("exit %d, no %q in:\n%s", code, want, stderr)
		}
	}

	// paths.prompts pointing into another clone: the study's own copy of a
	// template wins over the library's, and the output still lands beside
	// the run file, not in the clone.
	clone := filepath.Join(dir, "clone")
	os.MkdirAll(filepath.Join(clone, "prompts", "zero_shot"), 0o755)
	os.WriteFile(filepath.Join(clone, "prompts", "zero_shot", "user.tmpl"), []byte("{{.task.scenario}}\n\nSay whatever you like.\n"), 0o644)
	other := strings.Replace(run, "name: mine\n", "name: theirs\npaths: {prompts: ../clone/prompts}\n", 1)
	os.WriteFile(filepath.Join(study, "other.yaml"), []byte(other), 0o644)
	stdout, stderr, code = runIn(t, study, "apply", "other.yaml")
	if code != 0 || !strings.Contains(stdout, "outputs -> out/theirs") {
		t.Fatalf("apply with paths.prompts: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(clone, "out")); err == nil {
		t.Error("the output went into the clone that holds the prompts")
	}
	// zero_shot read the clone's template (5 unparsed); self_correct the
	// library's.
	if !strings.Contains(stdout, " 5 unparsed") {
		t.Errorf("the clone's template was not the one read:\n%s", stdout)
	}

	// A project laid out as the repository (the run file in configs/,
	// nothing else of its own) writes out/<name> beside configs/.
	project := filepath.Join(dir, "project")
	os.MkdirAll(filepath.Join(project, "configs"), 0o755)
	os.WriteFile(filepath.Join(project, "configs", "study.yaml"), []byte(run), 0o644)
	stdout, stderr, code = runIn(t, project, "apply", "configs/study.yaml")
	if code != 0 || !strings.Contains(stdout, "outputs -> out/mine") {
		t.Fatalf("apply in a project: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(project, "out", "mine", "results.parquet")); err != nil {
		t.Errorf("no results beside configs/: %v", err)
	}
}
