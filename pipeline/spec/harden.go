package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/secret"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// maxRunNameLen bounds a run's name: it names the default output folder
// (out/<name>) and appears in every summary.
const maxRunNameLen = 100

// IdentProblem says why name cannot serve as an identifier that is also one
// file or folder name (letters, digits, '.', '_' and '-', starting with a
// letter or digit, no "..", at most MaxRunNameLen bytes), or "" when it can.
func IdentProblem(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > maxRunNameLen:
		return fmt.Sprintf("is %d bytes long, over %d", len(name), maxRunNameLen)
	case strings.ContainsAny(name, `/\`):
		return "contains a path separator"
	case strings.Contains(name, ".."):
		return `contains ".."`
	case name[0] == '.' || name[0] == '-':
		return fmt.Sprintf("starts with %q", name[0])
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Sprintf("contains %q", r)
		}
	}
	return ""
}

// IdentHint is what to write instead of a name IdentProblem refuses.
const IdentHint = "use letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100 characters"

// checkRunName holds a run's name to what it is used as: an identifier
// that is also one folder name under out/. It never repeats a long value.
func checkRunName(name string, file string, line int, ds *yamlstrict.Diags) {
	if name == "" {
		return // the required-field check says so
	}
	if why := IdentProblem(name); why != "" {
		ds.Addf(file, line, "name", IdentHint+" (e.g. paper-2025); to write elsewhere set output: or apply --out",
			"the run's name %s %s: it names the output folder out/<name>, so it must be an identifier", Clip(name, 40), why)
	}
}

// Clip quotes s, cut to at most n runes with the length of the rest said,
// so a diagnostic never echoes a huge value.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	cut := s
	for i := range s {
		if n == 0 {
			cut = s[:i]
			break
		}
		n--
	}
	return fmt.Sprintf("%q… (%d bytes in all)", cut, len(s))
}

// checkBaseURL parses a model's base_url as apply will use it: an http or
// https URL with a host. The value is shown without credentials.
func checkBaseURL(raw, file string, line int, field string, ds *yamlstrict.Diags) {
	if raw == "" {
		return
	}
	const hint = "write the server's URL with its scheme and host, e.g. http://127.0.0.1:8000/v1 or https://api.together.xyz/v1"
	shown := Clip(secret.URL(raw), 80)
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		ds.Addf(file, line, field, hint, "base_url %s is not a URL", shown)
	case u.Scheme != "http" && u.Scheme != "https":
		ds.Addf(file, line, field, hint, "base_url %s is not an http(s) URL (scheme %s)", shown, Clip(u.Scheme, 20))
	case u.Host == "" || u.Hostname() == "":
		ds.Addf(file, line, field, hint, "base_url %s has no host", shown)
	}
}

// checkHasCases refuses a study that would run nothing: apply would succeed
// with no result, which reads like a finished study.
func checkHasCases(st *Study, root *yaml.Node, ds *yamlstrict.Diags) {
	if st.NumCases() > 0 {
		return
	}
	rf := st.Run
	line, field, why, hint := fieldLine(root, "strategies"), "strategies", "", ""
	switch {
	case len(st.Models) == 0:
		line, field, why, hint = fieldLine(root, "models"), "models", "no model is declared", "list at least one model under models:"
	case len(st.Strategies) == 0:
		why, hint = "no strategy is declared", "list at least one strategy under strategies:"
	case len(st.Tasks) == 0:
		line, field, why, hint = fieldLine(root, "tasks"), "tasks", "no task is declared", "list at least one task under tasks:"
	case len(st.Cells) == 0 && len(rf.Matrix) > 0:
		line, field, why, hint = fieldLine(root, "matrix"), "matrix", "the matrix leaves out every model x strategy x task", "widen the matrix or its exclusions"
	case len(st.Cells) == 0:
		why, hint = "no strategy applies to any task (a judge strategy runs only as a task's judge; applies_to limits the others)", "add a strategy that answers the tasks"
	default:
		line, field, why, hint = fieldLine(root, "tasks"), "tasks", "the tasks have no items", "check the tasks' datasets (path, filter, limit)"
	}
	ds.Addf(st.File, line, field, hint, "the study has no cases: %s", why)
}

// fieldWhere finds where a field of a spec built from layers was written:
// in the last layer that sets it (an override in the run file wins over the
// task file it uses), else where its nearest written parent is, else in the
// first layer's file at line dflt. The path it returns is the field's path
// in that file (tasks[0].dataset.limit in the run file).
func (l *loader) fieldWhere(layers []layer, dflt int) func(field string) (file string, line int, path string) {
	subs := make([]map[string]int, len(layers))
	for i, ly := range layers {
		subs[i] = l.subLines(ly.file, ly.path)
	}
	return func(field string) (string, int, string) {
		for f := field; f != ""; {
			for i := len(layers) - 1; i >= 0; i-- {
				if ln, ok := subs[i][f]; ok {
					return layers[i].file, ln, yamlstrict.JoinPath(layers[i].path, field)
				}
			}
			k := strings.LastIndexAny(f, ".[")
			if k < 0 {
				break
			}
			f = f[:k]
		}
		return layers[0].file, dflt, yamlstrict.JoinPath(layers[0].path, field)
	}
}

// checkCacheDir checks that settings.cache_dir (relative to the run file's
// folder dir) can hold the shared response cache: it is a folder, or can be
// made one, that this user can write. Nothing is created.
func checkCacheDir(set, dir, file string, line int, ds *yamlstrict.Diags) {
	d := set
	if !filepath.IsAbs(d) {
		d = filepath.Join(dir, d)
	}
	d = filepath.Clean(d)
	const hint = "name a folder you can write, or set settings.cache: run to keep this run's replies in its journal only"
	for p := d; ; {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			ds.Addf(file, line, "settings.cache_dir", hint, "%s is a file, not a folder: the shared response cache needs a folder", p)
			return
		case err == nil:
			if syscall.Access(p, 2|1) != nil { // W_OK|X_OK
				what := "cannot be written"
				if p != d {
					what = "cannot be written, so " + d + " cannot be made"
				}
				ds.Addf(file, line, "settings.cache_dir", hint, "the folder %s %s", p, what)
			}
			return
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			ds.Addf(file, line, "settings.cache_dir", hint, "%v", err)
			return
		}
		up := filepath.Dir(p)
		if up == p {
			return
		}
		p = up
	}
}
