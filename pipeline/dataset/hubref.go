package dataset

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Hub names a dataset on the Hugging Face hub. With Files the reference
// reads those files of the dataset repository at Revision; without them it
// reads the hub's Parquet conversion of Config and Split (the only way to
// read a dataset whose repository holds a loading script).
type Hub struct {
	ID       string   `yaml:"id,omitempty" required:"true" doc:"the dataset's id on the hub, owner/name, e.g. allenai/wildjailbreak"`
	Config   string   `yaml:"config,omitempty" doc:"the dataset's configuration (subset) name; default: default"`
	Split    string   `yaml:"split,omitempty" doc:"the split to read, e.g. test; required unless files is set"`
	Revision string   `yaml:"revision,omitempty" doc:"a commit (40 hex digits) or a branch or tag, resolved to a commit at the first fetch and pinned in the lock file; default: main"`
	Files    []string `yaml:"files,omitempty" doc:"paths of data files inside the dataset repository, read in order (format from dataset.format or the extension); when empty, the hub's Parquet conversion of config/split is read"`
	Rows     int      `yaml:"rows,omitempty" doc:"the number of items the task gets, declared so validate and plan count the cases before anything is fetched"`
	Bytes    int64    `yaml:"bytes,omitempty" doc:"the download's size in bytes, declared so plan says what a first run fetches"`
	Licence  string   `yaml:"licence,omitempty" doc:"the data's licence, shown by promoral data list"`
	Gated    bool     `yaml:"gated,omitempty" doc:"the dataset needs the user's hub token after they accept its terms on the hub (HF_TOKEN)"`
	Fixture  string   `yaml:"fixture,omitempty" doc:"an invented file in the same layout, relative to this YAML file, read instead of the hub data when the run sets settings.allow_fixtures (tests and demos): nothing is fetched and the task counts as fixture data"`
}

// Match checks loaded items against a shipped index of the same rows: the
// index's row count must equal the items', and each index row names an
// item by position (Row) or id (ID) whose Field starts with the index's
// Prefix column (a trailing "..." in the index marks a cut).
type Match struct {
	Path   string `yaml:"path,omitempty" required:"true" doc:"the index file, relative to the YAML file that declares it"`
	Row    string `yaml:"row,omitempty" doc:"index column holding the 0-based position of the item it describes"`
	ID     string `yaml:"id,omitempty" doc:"index column holding the id of the item it describes (instead of row)"`
	Field  string `yaml:"field,omitempty" doc:"item field whose text the index abbreviates, e.g. text"`
	Prefix string `yaml:"prefix,omitempty" doc:"index column holding the first characters of field"`
}

var hubID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ValidHubID says id is a hub dataset id, owner/name.
func ValidHubID(id string) bool { return hubID.MatchString(id) }

// Name is the reference as people write it: id[/config]:split@revision.
func (h *Hub) Name() string {
	var b strings.Builder
	b.WriteString(h.ID)
	if h.Config != "" {
		b.WriteString("/" + h.Config)
	}
	if h.Split != "" {
		b.WriteString(":" + h.Split)
	}
	if len(h.Files) > 0 {
		b.WriteString(" [" + strings.Join(h.Files, ", ") + "]")
	}
	if h.Revision != "" {
		b.WriteString("@" + h.Revision)
	}
	return b.String()
}

// Rev is the revision to resolve (main when unset).
func (h *Hub) Rev() string { return or(h.Revision, "main") }

func (h *Hub) check(format string, checkFormat func(parent, format, path string)) []error {
	var errs []error
	add := func(field, f string, args ...any) {
		errs = append(errs, &SpecError{Field: "hub." + field, Msg: fmt.Sprintf(f, args...)})
	}
	if !hubID.MatchString(h.ID) {
		add("id", "%q is not a hub dataset id; write owner/name, e.g. allenai/wildjailbreak", h.ID)
	}
	for _, f := range []struct{ name, v string }{{"config", h.Config}, {"split", h.Split}} {
		if why := NameProblem(f.v); f.v != "" && why != "" {
			add(f.name, "%s %s: it names a folder of the dataset cache, so it must be one name, not a path; write it as the hub shows it, e.g. default or test", clip(f.v), why)
		}
	}
	if why := RevisionProblem(h.Revision); h.Revision != "" && why != "" {
		add("revision", "%s is not a commit, branch or tag (%s); write a commit (40 hex digits), a branch or a tag of the dataset, or leave it out for main", clip(h.Revision), why)
	}
	if len(h.Files) == 0 && h.Split == "" {
		add("split", "is empty; name the split to read (e.g. test), or list the repository's data files under files")
	}
	for i, f := range h.Files {
		if f == "" || strings.HasPrefix(f, "/") || path.Clean(f) != f || strings.HasPrefix(f, "..") {
			add(fmt.Sprintf("files[%d]", i), "%q is not a path inside the repository; write it as the hub shows it, e.g. data/test.parquet", f)
			continue
		}
		checkFormat("", format, f)
	}
	if format != "" && len(h.Files) == 0 && strings.ToLower(format) != "parquet" {
		add("files", "is empty, so the hub's Parquet conversion is read, but dataset.format is %q; list the %s files, or drop format", format, format)
	}
	if h.Rows < 0 {
		add("rows", "is %d; declare the number of items, or leave it out", h.Rows)
	}
	if h.Bytes < 0 {
		add("bytes", "is %d; declare the download's size, or leave it out", h.Bytes)
	}
	return errs
}

// NameProblem says why a name from a config or from the hub (a config, a
// split, a file name of the Parquet conversion) cannot be one folder or
// file name of the dataset cache, or "" when it can.
func NameProblem(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > 255:
		return fmt.Sprintf("is %d bytes long, over 255", len(name))
	case strings.ContainsAny(name, `/\`):
		return "contains a path separator"
	case name == "." || name == "..":
		return "is " + name
	case name[0] == '.':
		return "starts with '.'"
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Sprintf("contains the control character %q", r)
		}
	}
	return ""
}

// RevisionProblem says why a revision cannot be a commit, branch or tag
// name (git's rules for a ref), or "" when it can.
func RevisionProblem(rev string) string {
	switch {
	case len(rev) > 255:
		return fmt.Sprintf("%d bytes long, over 255", len(rev))
	case strings.Contains(rev, ".."):
		return `it contains ".."`
	case strings.Contains(rev, "//"), strings.HasPrefix(rev, "/"), strings.HasSuffix(rev, "/"):
		return "an empty part between slashes"
	case strings.HasSuffix(rev, ".lock"), strings.HasSuffix(rev, "."):
		return "it ends with .lock or '.'"
	case strings.Contains(rev, "@{"):
		return `it contains "@{"`
	}
	for _, part := range strings.Split(rev, "/") {
		if strings.HasPrefix(part, ".") {
			return "a part starts with '.'"
		}
	}
	for _, r := range rev {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r) {
			return fmt.Sprintf("it contains %q", r)
		}
	}
	return ""
}

// clip quotes s, cut to at most 60 bytes, so a message never echoes a
// huge value.
func clip(s string) string {
	if len(s) <= 60 {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:60]), len(s))
}
