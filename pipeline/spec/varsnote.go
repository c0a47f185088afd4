package spec

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// varsFileNotes tells which models of the study fall back on their inline
// vars because their optional vars_file is not written yet, when a file
// of the study (a strategy or a prompt) reads one of those vars: the
// run's prompts then say the inline text, not the one the producing run
// would choose (Role Prompting's confirmation before role_selection.yaml
// has run). The run file that writes the vars file is named when one
// beside the run file does.
func varsFileNotes(st *Study, files map[string][]byte) []string {
	used := map[string]bool{}
	for _, c := range st.Cells {
		used[c.Model.Name] = true
	}
	type missing struct {
		models []string
		keys   map[string]bool
	}
	byFile := map[string]*missing{}
	for _, m := range st.Models {
		vf := m.Spec.VarsFile
		if !used[m.Name] || vf == nil || !vf.Optional {
			continue
		}
		file := vf.Path
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(m.Spec.File), file)
		}
		file = filepath.Clean(file)
		if _, err := os.Stat(file); err == nil {
			continue
		}
		var keys []string
		for k := range m.Spec.Vars {
			for _, data := range files {
				if readsVar(string(data), k) {
					keys = append(keys, k)
					break
				}
			}
		}
		if len(keys) == 0 {
			continue // the study reads none of the vars the file would set
		}
		g := byFile[file]
		if g == nil {
			g = &missing{keys: map[string]bool{}}
			byFile[file] = g
		}
		g.models = append(g.models, m.Name)
		for _, k := range keys {
			g.keys[k] = true
		}
	}
	var notes []string
	for _, file := range slices.Sorted(maps.Keys(byFile)) {
		g := byFile[file]
		var keys []string
		for k := range g.keys {
			keys = append(keys, "vars."+k)
		}
		sort.Strings(keys)
		who, their := "model "+g.models[0]+" uses its", "its"
		if len(g.models) > 1 {
			who, their = "models "+strings.Join(g.models, ", ")+" use their", "their"
		}
		note := fmt.Sprintf("%s inline %s: %s vars_file %s is not written yet", who, strings.Join(keys, ", "), their, shortPath(file))
		prod := producer(filepath.Dir(st.File), file)
		if prod != "" && sameFile(prod, st.File) {
			continue // the run that writes it: its inline vars are what it starts from
		}
		if prod != "" {
			note += fmt.Sprintf("; `promoral apply %s` writes it, so apply that first", shortPath(prod))
		} else {
			note += "; apply the run that writes it first"
		}
		notes = append(notes, note)
	}
	return notes
}

// producer finds, among the run files in dir, one whose metric block
// writes file into its output folder.
func producer(dir, file string) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var rf struct {
			Output  string `yaml:"output"`
			Metrics []struct {
				Write string `yaml:"write"`
			} `yaml:"metrics"`
		}
		if yaml.Unmarshal(data, &rf) != nil || rf.Output == "" {
			continue
		}
		out := rf.Output
		if !filepath.IsAbs(out) {
			out = filepath.Join(dir, out)
		}
		for _, m := range rf.Metrics {
			if m.Write != "" && filepath.Clean(filepath.Join(out, m.Write)) == file {
				return p
			}
		}
	}
	return ""
}

// shortPath is path relative to the working folder when it is inside it.
func shortPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// readsVar says whether a file's text, its YAML comment lines aside,
// reads .model.vars.<key>.
func readsVar(text, key string) bool {
	for _, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") {
			continue
		}
		if strings.Contains(line, "model.vars."+key) {
			return true
		}
	}
	return false
}

func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
