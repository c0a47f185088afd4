package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
		"against the journal in out/killme:", "slow               6 of 12 cases to run (6 already answered), 6 new calls",
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
	for _, want := range []string{"paired accuracy (new - old)", "slow / once / toy: n=12  -0.2500", "flips 3->wrong 0->right", "McNemar p=0.25", "(now wrong)"} {
		if !strings.Contains(out, want) {
			t.Errorf("run diff lacks %q:\n%s", want, out)
		}
	}
}
