package spec

import (
	"os"
	"path"
	"path/filepath"

	"github.com/promoral/promoral"
)

// The shipped library (the module root's builtin.go) is the second place
// every run file looks: a task, strategy or model name the run file's own
// folder lacks (tasks/, strategies/, models/ beside it, or paths:) is read
// from the library's configs/, and a template or demonstrations file the
// prompts folder lacks from the library's prompts/. The user's files come
// first, so a copy in the study's folder overrides the shipped one. A
// library file's relative paths (a task's dataset) resolve within the
// library, which is written out of the binary on first use.

// libraryFolder is the library folder of a kind of bare name, and the
// paths: field that points a run file elsewhere.
func libraryFolder(what string) (dir, field string) {
	switch what {
	case "task":
		return promoral.LibTasks, "paths.tasks"
	case "strategy":
		return promoral.LibStrategies, "paths.strategies"
	case "model":
		return promoral.LibModels, "paths.models"
	}
	return "", ""
}

// libraryFile is the file on disk of rel (a slash path within the library)
// when the library holds it; err when the library cannot be written out.
func libraryFile(rel string) (file string, ok bool, err error) {
	if !promoral.Has(rel) {
		return "", false, nil
	}
	dir, err := promoral.Library()
	if err != nil {
		return "", false, err
	}
	return filepath.Join(dir, filepath.FromSlash(path.Clean(rel))), true, nil
}

// promptFile is the file a template or demonstrations path (relative to
// the prompts folder) reads: the prompts folder's own, else the shipped
// library's, else the prompts folder's (whose absence is then reported).
func promptFile(promptsDir, rel string) string {
	own := filepath.Join(promptsDir, rel)
	if _, err := os.Stat(own); err == nil || filepath.IsAbs(rel) {
		return own
	}
	if f, ok, _ := libraryFile(path.Join(promoral.LibPrompts, filepath.ToSlash(rel))); ok {
		return f
	}
	return own
}
