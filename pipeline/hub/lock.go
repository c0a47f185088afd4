package hub

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/dataset"
)

// Lock is a run's lock file: per task, the dataset reference as written,
// the commit it resolved to and every file's URL, size and sha256. The
// first fetch writes an entry; every later load verifies the cache against
// it; only `promoral data pull --update NAME` replaces one.
type Lock struct {
	Path     string            `yaml:"-"`
	Datasets map[string]*Entry `yaml:"datasets"`
}

// Entry is one dataset of a lock.
type Entry struct {
	ID       string   `yaml:"id"`
	Config   string   `yaml:"config,omitempty"`
	Split    string   `yaml:"split,omitempty"`
	Revision string   `yaml:"revision"`
	Want     []string `yaml:"want,omitempty"`
	Commit   string   `yaml:"commit"`
	Files    []File   `yaml:"files"`
}

// LockPath is the lock file of a run file: beside it, <stem>.lock.yaml.
func LockPath(runFile string) string {
	ext := filepath.Ext(runFile)
	return strings.TrimSuffix(runFile, ext) + ".lock.yaml"
}

// ReadLock reads a lock file; a missing file is an empty lock.
func ReadLock(path string) (*Lock, error) {
	l := &Lock{Path: path, Datasets: map[string]*Entry{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(data, l); err != nil {
		return nil, fmt.Errorf("%s: %v; fix it, or delete it and run promoral data pull to write it again", path, err)
	}
	if l.Datasets == nil {
		l.Datasets = map[string]*Entry{}
	}
	return l, nil
}

// Save writes the lock (to a temporary file, then renamed in).
func (l *Lock) Save() error {
	var b bytes.Buffer
	b.WriteString("# Datasets this run reads by hub reference, pinned: written by the first fetch,\n" +
		"# verified at every load. Commit it with the run file. To take new upstream\n" +
		"# data on purpose: promoral data pull --update NAME <run file>\n")
	names := make([]string, 0, len(l.Datasets))
	for k := range l.Datasets {
		names = append(names, k)
	}
	sort.Strings(names)
	var root yaml.Node
	root.Kind = yaml.MappingNode
	ds := &yaml.Node{Kind: yaml.MappingNode}
	for _, n := range names {
		var v yaml.Node
		if err := v.Encode(l.Datasets[n]); err != nil {
			return err
		}
		ds.Content = append(ds.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: n}, &v)
	}
	root.Content = []*yaml.Node{{Kind: yaml.ScalarNode, Value: "datasets"}, ds}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return err
	}
	return writeAtomic(l.Path, b.Bytes())
}

// matches reports whether the entry was made for this reference.
func (e *Entry) matches(ref *dataset.Hub) bool {
	return e.ID == ref.ID && e.Config == ref.Config && e.Split == ref.Split && e.Revision == ref.Rev() && slices.Equal(e.Want, ref.Files)
}

func entryFor(ref *dataset.Hub, r *Resolved) *Entry {
	return &Entry{ID: ref.ID, Config: ref.Config, Split: ref.Split, Revision: ref.Rev(), Want: slices.Clone(ref.Files), Commit: r.Commit, Files: r.Files}
}
