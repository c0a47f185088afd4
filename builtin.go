// Package promoral carries the files the promoral binary needs outside the
// repository: the quickstart study, with its strategies, tasks, prompts and
// shipped data (and their licence notices), so `promoral apply quickstart`
// runs from any folder. It lives at the module root because go:embed
// cannot reach into parent folders.
package promoral

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
)

//go:embed configs/quickstart.yaml
//go:embed configs/strategies/zero_shot.yaml configs/strategies/self_correct.yaml configs/strategies/rescore.yaml
//go:embed configs/tasks/ethics.yaml configs/tasks/promoral_replies.yaml
//go:embed prompts/zero_shot prompts/self_correct prompts/demonstrations/ethics.yaml
//go:embed data/SOURCES.md data/ethics/NOTICE.md data/ethics/commonsense_test_hard.jsonl
//go:embed data/promoral_runs data/promoral_reference
var files embed.FS

// Studies maps each built-in study's name to its run file within Files.
var Studies = map[string]string{"quickstart": "configs/quickstart.yaml"}

var (
	hashOnce sync.Once
	hash     string
)

// Hash identifies the built-in files' content, so a new binary with changed
// files never reuses an old extraction.
func Hash() string {
	hashOnce.Do(func() {
		var names []string
		fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, p)
			}
			return nil
		})
		sort.Strings(names)
		h := sha256.New()
		for _, n := range names {
			data, _ := files.ReadFile(n)
			fmt.Fprintf(h, "%s\x00%d\x00", n, len(data))
			h.Write(data)
		}
		hash = hex.EncodeToString(h.Sum(nil))[:16]
	})
	return hash
}

// Extract writes the built-in files into root/builtin-<hash> unless an
// earlier run did, and returns that folder. The loader, the datasets and
// the templates read real files, and a fixed folder per content keeps the
// config's identity the same from run to run. The folder appears whole or
// not at all: it is written under a temporary name and renamed.
func Extract(root string) (string, error) {
	dir := filepath.Join(root, "builtin-"+Hash())
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("writing the built-in study: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".builtin-*")
	if err != nil {
		return "", fmt.Errorf("writing the built-in study: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; cleans up after a failure
	err = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(tmp, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("writing the built-in study: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another promoral may have written it first.
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
			return dir, nil
		}
		return "", fmt.Errorf("writing the built-in study: %w", err)
	}
	return dir, nil
}

// RunFile is the path of a built-in study's run file under an extraction.
func RunFile(dir, study string) string {
	return filepath.Join(dir, filepath.FromSlash(path.Clean(Studies[study])))
}
