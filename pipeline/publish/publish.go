// Package publish puts a run folder on the Hugging Face hub as a dataset:
// results, calls and metrics as Parquet with a dataset card whose YAML
// header declares them, so the hub's dataset viewer shows them; the
// manifest, the metric tables and the report when the run has one. Plan
// says what a publish sends; hub.Client.Push sends it.
package publish

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/hub"
)

// Extra is a file or folder a publish carries beside the run's own files:
// the hook for outputs made from a run by other verbs (an Every Eval Ever
// export, a static viewer bundle). The command's list of them is
// cmd/promoral's publishExtras; --add appends to it.
type Extra struct {
	// Local is the file or folder on disk; a folder's files go below
	// Repo, in their own sub-folders.
	Local string
	// Repo is its path in the repository.
	Repo string
	// About is a line for the card's table of files.
	About string
	// Configs declares some of its files to the hub's dataset viewer.
	Configs []Config
	// Optional: a Local that does not exist is left out instead of being
	// an error.
	Optional bool
}

// Config is a table the hub's dataset viewer shows: a name and the files
// (a path or glob in the repository) that make its one split.
type Config struct {
	Name string
	Path string
}

// Split is the split every config of a publish has: the name the hub's
// libraries give a dataset's only split.
const Split = "train"

// Plan is what a publish of a run sends.
type Plan struct {
	Run  string
	Repo hub.Repo
	// Files are in the order they are listed and committed; the card
	// (README.md) is last.
	Files []*hub.Upload
	Card  string
}

// Size is the bytes of all files.
func (p *Plan) Size() int64 {
	var n int64
	for _, f := range p.Files {
		n += f.Size
	}
	return n
}

// table is one of the run's Parquet files, shown by the viewer.
type table struct {
	file, config, about string
}

var tables = []table{
	{"results.parquet", "results", "one row per case: the item, the answer read, whether it is correct, tokens, cost, the trace of the stages"},
	{"calls.parquet", "calls", "one row per model call: the request's messages and parameters, the reply, tokens, latency"},
	{"metrics.parquet", "metrics", "one row per figure: value, interval, n and what it counts, status, the policies it was computed under"},
}

// manifest holds the fields of a run's manifest.json the card shows.
type manifest struct {
	Run         string   `json:"run"`
	Version     string   `json:"version"`
	ConfigHash  string   `json:"config_hash"`
	Cases       int      `json:"cases"`
	CallsNew    int      `json:"calls_new"`
	CallsCached int      `json:"calls_cached"`
	Errors      int      `json:"errors"`
	Unparsed    int      `json:"unparsed"`
	Finished    string   `json:"finished"`
	Strategies  []string `json:"strategies"`
	Models      []struct {
		Name     string `json:"name"`
		Provider string `json:"provider"`
		Model    string `json:"model"`
	} `json:"models"`
	Tasks []struct {
		Name  string `json:"name"`
		Items int    `json:"items"`
	} `json:"tasks"`
}

// New plans the publish of the run folder dir to repo, with extras.
func New(dir string, repo hub.Repo, extras []Extra) (*Plan, error) {
	if _, err := os.Stat(filepath.Join(dir, "results.parquet")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a finished run folder (it has no results.parquet): run promoral apply first, or name the folder apply wrote (out/<run name>)", dir)
		}
		return nil, err
	}
	var m manifest
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w (a run folder written by promoral apply has one)", filepath.Join(dir, "manifest.json"), err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s is not the manifest promoral writes: %v", filepath.Join(dir, "manifest.json"), err)
	}
	p := &Plan{Run: dir, Repo: repo}
	var configs []Config
	var about [][2]string
	add := func(local, repoPath, what string) {
		p.Files = append(p.Files, &hub.Upload{Path: repoPath, Local: local})
		if what != "" {
			about = append(about, [2]string{repoPath, what})
		}
	}
	for _, t := range tables {
		local := filepath.Join(dir, t.file)
		if _, err := os.Stat(local); err != nil {
			continue
		}
		add(local, t.file, t.about)
		configs = append(configs, Config{Name: t.config, Path: t.file})
	}
	add(filepath.Join(dir, "manifest.json"), "manifest.json", "what the run was: config hash, counts, models with their endpoints and prices, tasks with their data files (their paths on the machine that ran it), metric blocks")
	csvs, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	sort.Strings(csvs)
	for _, c := range csvs {
		add(c, "tables/"+filepath.Base(c), "")
	}
	if len(csvs) > 0 {
		about = append(about, [2]string{"tables/", "the metric tables as CSV (calibration, reliability bins, comparisons, ...), each starting with its block column"})
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
		n := len(p.Files)
		if err := addTree(p, dir, "report", []string{"report.html", "report.md", "figures"}); err != nil {
			return nil, err
		}
		if len(p.Files) > n {
			about = append(about, [2]string{"report/", "the report: `report.html` (one file that opens offline), `report.md` and `figures/`"})
		}
	}
	for _, e := range extras {
		clean := path.Clean(filepath.ToSlash(e.Repo))
		if e.Repo == "" || clean == "." || strings.HasPrefix(clean, "../") || clean == ".." || path.IsAbs(clean) {
			return nil, fmt.Errorf("%s: its path in the repository (%q) must be a relative path inside it", e.Local, e.Repo)
		}
		st, err := os.Stat(e.Local)
		if err != nil {
			if e.Optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("cannot add %s to the publish: %w", e.Local, err)
		}
		if st.IsDir() {
			if err := addTree(p, e.Local, clean, nil); err != nil {
				return nil, err
			}
			if e.About != "" {
				about = append(about, [2]string{clean + "/", e.About})
			}
		} else {
			add(e.Local, clean, e.About)
		}
		configs = append(configs, e.Configs...)
	}
	seen := map[string]string{}
	for _, f := range p.Files {
		if f.Path == "README.md" {
			return nil, fmt.Errorf("%s would replace the dataset card (README.md), which publish writes: give it another path in the repository", f.Local)
		}
		if prev, ok := seen[f.Path]; ok {
			return nil, fmt.Errorf("%s and %s would both be %s in the repository: give one of them another path", prev, f.Local, f.Path)
		}
		seen[f.Path] = f.Local
		if err := f.Measure(); err != nil {
			return nil, err
		}
	}
	card, err := writeCard(m, repo, configs, about)
	if err != nil {
		return nil, err
	}
	p.Card = card
	readme := &hub.Upload{Path: "README.md", Data: []byte(card)}
	if err := readme.Measure(); err != nil {
		return nil, err
	}
	p.Files = append(p.Files, readme)
	return p, nil
}

// addTree adds the regular files below dir/names (all of dir when names
// is nil) under the repository folder repo, in name order. Dot files and
// symbolic links to folders are left out.
func addTree(p *Plan, dir, repo string, names []string) error {
	roots := []string{dir}
	if names != nil {
		roots = nil
		for _, n := range names {
			roots = append(roots, filepath.Join(dir, n))
		}
	}
	for _, root := range roots {
		if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		err := filepath.WalkDir(root, func(local string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasPrefix(d.Name(), ".") && local != root {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			st, err := os.Stat(local)
			if err != nil || !st.Mode().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(dir, local)
			if err != nil {
				return err
			}
			p.Files = append(p.Files, &hub.Upload{Path: path.Join(repo, filepath.ToSlash(rel)), Local: local})
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

type cardConfig struct {
	ConfigName string      `yaml:"config_name"`
	Default    bool        `yaml:"default,omitempty"`
	DataFiles  []cardSplit `yaml:"data_files"`
}

type cardSplit struct {
	Split string `yaml:"split"`
	Path  string `yaml:"path"`
}

type cardHeader struct {
	PrettyName string       `yaml:"pretty_name"`
	Tags       []string     `yaml:"tags"`
	Configs    []cardConfig `yaml:"configs"`
}

// writeCard writes the dataset card: a YAML header that names the run and
// declares each config (one split, Split, of the files at its path) for
// the hub's viewer, the first one the default; then the run in brief, its
// files, and how to read them.
func writeCard(m manifest, repo hub.Repo, configs []Config, about [][2]string) (string, error) {
	h := cardHeader{PrettyName: "promoral run: " + m.Run, Tags: []string{"promoral", "evaluation", "llm"}}
	names := map[string]bool{}
	for i, c := range configs {
		if names[c.Name] || !validConfigName(c.Name) {
			return "", fmt.Errorf("the dataset card cannot declare config %q: config names are unique and made of letters, digits, '_' and '-'", c.Name)
		}
		names[c.Name] = true
		h.Configs = append(h.Configs, cardConfig{ConfigName: c.Name, Default: i == 0, DataFiles: []cardSplit{{Split, c.Path}}})
	}
	var b strings.Builder
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(h); err != nil {
		return "", err
	}
	enc.Close()
	b.WriteString("---\n\n")
	fmt.Fprintf(&b, "# promoral run `%s`\n\n", m.Run)
	b.WriteString("The outputs of a study run with promoral, which runs prompting-strategy studies of LLM\n" +
		"moral reasoning and safety written as YAML. The dataset viewer shows each table this card's\n" +
		"header declares; promoral's docs/outputs.md describes every column.\n\n")
	b.WriteString("| | |\n| --- | --- |\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "| %s | %s |\n", k, strings.ReplaceAll(v, "|", "\\|"))
		}
	}
	row("cases", fmt.Sprintf("%s (%s errored, %s without an answer read)", thousands(m.Cases), thousands(m.Errors), thousands(m.Unparsed)))
	row("model calls", fmt.Sprintf("%s (%s made by this run, %s served from its journal)", thousands(m.CallsNew+m.CallsCached), thousands(m.CallsNew), thousands(m.CallsCached)))
	var models []string
	for _, x := range m.Models {
		s := x.Name
		if x.Model != "" && x.Model != x.Name {
			s += " = " + x.Model
		}
		if x.Provider != "" {
			s += " (" + x.Provider + ")"
		}
		models = append(models, s)
	}
	row("models", strings.Join(models, ", "))
	row("strategies", strings.Join(m.Strategies, ", "))
	var tasks []string
	for _, t := range m.Tasks {
		tasks = append(tasks, fmt.Sprintf("%s (%s items)", t.Name, thousands(t.Items)))
	}
	row("tasks", strings.Join(tasks, ", "))
	row("promoral", m.Version)
	if m.ConfigHash != "" {
		row("config hash", "`"+m.ConfigHash+"`")
	}
	row("finished", m.Finished)
	b.WriteString("\n## Files\n\n| file | what |\n| --- | --- |\n")
	for _, a := range about {
		fmt.Fprintf(&b, "| `%s` | %s |\n", a[0], a[1])
	}
	b.WriteString("\n## Reading them\n\n```python\nfrom datasets import load_dataset\n\n")
	first := "results"
	if len(configs) > 0 {
		first = configs[0].Name
	}
	fmt.Fprintf(&b, "rows = load_dataset(%q, %q, split=%q)\n```\n\n", repo.ID, first, Split)
	if len(configs) > 0 {
		fmt.Fprintf(&b, "```sql\n-- DuckDB\nSELECT * FROM 'hf://datasets/%s/%s' LIMIT 10;\n```\n", repo.ID, configs[0].Path)
	}
	return b.String(), nil
}

func validConfigName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
