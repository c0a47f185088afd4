package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// apply --help and plan --help name the shard flag's value: --shard k/N.
func TestShardHelpNamesItsValue(t *testing.T) {
	for _, verb := range []string{"apply", "plan"} {
		out, _, code := runCLI(t, verb, "--help")
		if code != 0 || !strings.Contains(out, "--shard k/N") || strings.Contains(out, "--shard promoral") {
			t.Errorf("%s --help (exit %d):\n%s", verb, code, out)
		}
	}
}

// Every verb's --help reads at an 80-column terminal: descriptions, the
// command list and the flags wrap; only an example command line longer
// than that (one word after its indent) may run past.
func TestHelpFitsEightyColumns(t *testing.T) {
	var verbs [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		verbs = append(verbs, path)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub, append(slices.Clone(path), sub.Name()))
			}
		}
	}
	walk(newRoot(), nil)
	if len(verbs) < 14 {
		t.Fatalf("found %d verbs", len(verbs))
	}
	for _, v := range verbs {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append(slices.Clone(v), "--help"))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v --help: %v", v, err)
		}
		if !strings.Contains(out.String(), "Usage:") {
			t.Fatalf("%v --help printed no usage:\n%s", v, out.String())
		}
		for _, l := range strings.Split(out.String(), "\n") {
			example := strings.HasPrefix(l, "  ") && strings.Contains(strings.TrimSpace(l), "promoral ")
			if utf8.RuneCountInString(l) > 80 && !example {
				t.Errorf("promoral %s --help: a line of %d columns: %q", strings.Join(v, " "), utf8.RuneCountInString(l), l)
			}
		}
	}
}

// A long description keeps its paragraphs and its indented lines.
func TestWrapLongKeepsStructure(t *testing.T) {
	in := "First paragraph, " + strings.Repeat("word ", 30) + "end.\nSecond line of the paragraph.\n\n  promoral apply configs/paper.yaml   # an example\n- a list item " + strings.Repeat("more ", 20) + "done"
	got := wrapLong(in)
	lines := strings.Split(got, "\n")
	for _, l := range lines {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("line of %d: %q", utf8.RuneCountInString(l), l)
		}
	}
	if !strings.Contains(got, "\n\n  promoral apply configs/paper.yaml   # an example\n- a list item") {
		t.Errorf("the example and the list item lost their places:\n%s", got)
	}
	if !strings.Contains(got, "end. Second line of the paragraph.") {
		t.Errorf("the paragraph was not reflowed:\n%s", got)
	}
	if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(in), " ") {
		t.Errorf("words changed:\n%s", got)
	}
}
