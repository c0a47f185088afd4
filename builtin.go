// Package promoral carries the files the promoral binary needs outside the
// repository: the shipped library (every task, strategy and model file
// under configs/, the prompts and the shipped data, with their licence
// notices) and the quickstart study. Every run file falls back on the
// library for the names and templates its own folders lack, so a study in
// any folder can use the shipped pieces, and `promoral apply quickstart`
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
//go:embed configs/strategies configs/tasks configs/models
//go:embed prompts data
var files embed.FS

// The library's folders within Files, as they lie in the repository.
const (
	LibStrategies = "configs/strategies"
	LibTasks      = "configs/tasks"
	LibModels     = "configs/models"
	LibPrompts    = "prompts"
)

// Has reports whether the library holds a file (a slash path such as
// configs/tasks/ethics.yaml or prompts/zero_shot/user.tmpl), without
// writing anything.
func Has(rel string) bool {
	rel = path.Clean(rel)
	if !fs.ValidPath(rel) {
		return false
	}
	st, err := fs.Stat(files, rel)
	return err == nil && !st.IsDir()
}

// Names lists the YAML files of a library folder without their extension
// (the names a run file can use), sorted.
func Names(dir string) []string {
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if ext := path.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, e.Name()[:len(e.Name())-len(ext)])
		}
	}
	sort.Strings(out)
	return out
}

// LibraryEnv names the folder the library is written out into, instead of
// the user's cache folder (tests set it).
const LibraryEnv = "PROMORAL_LIBRARY_DIR"

var library = sync.OnceValues(func() (string, error) {
	if d := os.Getenv(LibraryEnv); d != "" {
		return Extract(d)
	}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	return Extract(filepath.Join(root, "promoral"))
})

// Library is the folder that holds the library on disk: written out of the
// binary into the user's cache folder (<cache>/promoral/builtin-<hash>, or
// $PROMORAL_LIBRARY_DIR/builtin-<hash>) on first use, once per process;
// the loader, the datasets and the templates read real files.
func Library() (string, error) { return library() }

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
