package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/promoral/promoral"
	"gopkg.in/yaml.v3"
)

// resultsKey names everything a case's result depends on, and nothing that
// only its scoring does: promoral's own code (its version and the build),
// every config, strategy, task and template file, the run file without its
// metric blocks, the bytes of every dataset and exclude list, and the
// number of cases. Two applies with the same key compute the same result
// for every case from the same journal, so a re-apply may take an earlier
// apply's good rows instead of walking them again ("" when unknown: no
// re-use).
func resultsKey(st *Study, root *yaml.Node, files map[string][]byte) string {
	h := sha256.New()
	code := codeIdentity()
	if code == "" {
		return ""
	}
	fmt.Fprintf(h, "promoral %s %s\x00", promoral.Version, code)
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		data := files[f]
		if f == st.File {
			var err error
			if data, err = withoutScoring(root); err != nil {
				return ""
			}
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	for _, t := range st.Tasks {
		for _, p := range []string{t.Spec.Dataset.Resolve(filepath.Dir(t.Spec.File)), excludePath(t)} {
			if p == "" {
				continue
			}
			sum, err := fileSum(p)
			if err != nil {
				return ""
			}
			fmt.Fprintf(h, "data %s %s\x00", p, sum)
		}
		fmt.Fprintf(h, "task %s %d\x00", t.Name, len(t.Items))
	}
	fmt.Fprintf(h, "cases %d\x00", st.NumCases())
	return hex.EncodeToString(h.Sum(nil))
}

// withRunFileForResults is the config files as the config hash reads them:
// the run file without its metric blocks and settings.concurrency, cache and cache_dir, since no
// case's result depends on them (a metric-only change keeps every results
// row, and its config_hash, as it was). A run file that cannot be re-encoded
// enters whole.
func withRunFileForResults(st *Study, root *yaml.Node, files map[string][]byte) map[string][]byte {
	if _, ok := files[st.File]; !ok || root == nil {
		return files
	}
	trimmed, err := withoutScoring(root)
	if err != nil {
		return files
	}
	out := make(map[string][]byte, len(files))
	for f, d := range files {
		out[f] = d
	}
	out[st.File] = trimmed
	return out
}

func excludePath(t *Task) string {
	ex := t.Spec.Dataset.Exclude
	if ex == nil || ex.Path == "" {
		return ""
	}
	if filepath.IsAbs(ex.Path) {
		return ex.Path
	}
	return filepath.Join(filepath.Dir(t.Spec.File), ex.Path)
}

// withoutScoring is the run file without what only scoring, pacing and
// caching read: its metrics: blocks and settings.concurrency, cache and
// cache_dir (a reply is the same wherever it was cached).
func withoutScoring(root *yaml.Node) ([]byte, error) {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return yaml.Marshal(root)
	}
	cp := *doc
	cp.Content = nil
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		switch k.Value {
		case "metrics":
			continue
		case "settings":
			if v.Kind == yaml.MappingNode {
				sv := *v
				sv.Content = nil
				for j := 0; j+1 < len(v.Content); j += 2 {
					if k := v.Content[j].Value; k != "concurrency" && k != "cache" && k != "cache_dir" {
						sv.Content = append(sv.Content, v.Content[j], v.Content[j+1])
					}
				}
				v = &sv
			}
		}
		cp.Content = append(cp.Content, k, v)
	}
	return yaml.Marshal(&cp)
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

var codeOnce struct {
	sync.Once
	id string
}

// codeIdentity is the build id the Go linker writes near the start of the
// executable: it changes with any change to the code, so results computed
// by one build are never taken for another's. "" when it cannot be read.
func codeIdentity() string {
	codeOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		f, err := os.Open(exe)
		if err != nil {
			return
		}
		defer f.Close()
		head := make([]byte, 64<<10)
		n, _ := io.ReadFull(f, head)
		head = head[:n]
		codeOnce.id = buildID(head)
	})
	return codeOnce.id
}

// buildID finds the Go build id in the head of an executable: in ELF, the
// .note.go.buildid note (name "Go", type 4); elsewhere the text the linker
// writes as \xff Go build ID: "…".
func buildID(head []byte) string {
	note := []byte("\x04\x00\x00\x00Go\x00\x00")
	if i := bytes.Index(head, note); i >= 4 {
		n := int(binary.LittleEndian.Uint32(head[i-4:]))
		start := i + len(note)
		if n > 0 && n < 1024 && start+n <= len(head) {
			return string(head[start : start+n])
		}
	}
	const mark = "\xff Go build ID: \""
	i := bytes.Index(head, []byte(mark))
	if i < 0 {
		return ""
	}
	rest := head[i+len(mark):]
	if j := bytes.IndexByte(rest, '"'); j > 0 {
		return string(rest[:j])
	}
	return ""
}
