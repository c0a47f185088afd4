package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHubReferenceCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want []string // substrings, one per expected error
	}{
		{"ok split", Spec{Hub: &Hub{ID: "owner/set", Split: "test"}}, nil},
		{"ok files", Spec{Hub: &Hub{ID: "owner/set", Files: []string{"data/eval.tsv"}}}, nil},
		{"both", Spec{Path: "x.jsonl", Hub: &Hub{ID: "owner/set", Split: "test"}}, []string{"hub: cannot be combined with path"}},
		{"neither", Spec{}, []string{"path: is empty"}},
		{"bad id", Spec{Hub: &Hub{ID: "just-a-name", Split: "test"}}, []string{"hub.id: \"just-a-name\" is not a hub dataset id"}},
		{"no split", Spec{Hub: &Hub{ID: "owner/set"}}, []string{"hub.split: is empty"}},
		{"ok names", Spec{Hub: &Hub{ID: "owner/set", Config: "20220301.en", Split: "train_sft", Revision: "refs/convert/parquet"}}, nil},
		{"ok tag", Spec{Hub: &Hub{ID: "owner/set", Split: "test", Revision: "v1.0-rc_2"}}, nil},
		{"ok commit", Spec{Hub: &Hub{ID: "owner/set", Split: "test", Revision: "0123456789abcdef0123456789abcdef01234567"}}, nil},
		{"escaping config", Spec{Hub: &Hub{ID: "owner/set", Split: "test", Config: "../../../PWN_C"}}, []string{"hub.config: \"../../../PWN_C\" contains a path separator"}},
		{"config ..", Spec{Hub: &Hub{ID: "owner/set", Split: "test", Config: ".."}}, []string{"hub.config: \"..\" is .."}},
		{"escaping split", Spec{Hub: &Hub{ID: "owner/set", Split: `..\x`}}, []string{"hub.split"}},
		{"split with a newline", Spec{Hub: &Hub{ID: "owner/set", Split: "te\nst"}}, []string{"hub.split: \"te\\nst\" contains the control character"}},
		{"revision with a newline", Spec{Hub: &Hub{ID: "owner/set", Split: "test", Revision: "main branch\nx"}}, []string{"hub.revision: \"main branch\\nx\" is not a commit"}},
		{"revision ..", Spec{Hub: &Hub{ID: "owner/set", Split: "test", Revision: "../../../etc"}}, []string{`hub.revision: "../../../etc" is not a commit, branch or tag (it contains "..")`}},
		{"revision /", Spec{Hub: &Hub{ID: "owner/set", Split: "test", Revision: "/etc"}}, []string{"hub.revision"}},
		{"escaping file", Spec{Hub: &Hub{ID: "owner/set", Files: []string{"../x.csv"}}}, []string{"hub.files[0]"}},
		{"unknown ext", Spec{Hub: &Hub{ID: "owner/set", Files: []string{"data/x.bin"}}}, []string{"cannot infer the format"}},
		{"conversion is parquet", Spec{Format: "csv", Hub: &Hub{ID: "owner/set", Split: "test"}}, []string{"hub.files: is empty, so the hub's Parquet conversion is read"}},
		{"negative rows", Spec{Hub: &Hub{ID: "owner/set", Split: "test", Rows: -1}}, []string{"hub.rows"}},
		{"match half", Spec{Path: "x.jsonl", Match: &Match{Path: "i.jsonl", Row: "row", Field: "text"}}, []string{"match.prefix"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.spec.Check()
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d", errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %q lacks %q", errs[i], w)
				}
			}
		})
	}
}

// A hub reference reads the files it resolved to, in order, with the
// spec's mapping and filters; unresolved, it says to pull.
func TestLoadReadsResolvedFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "0.jsonl"), filepath.Join(dir, "1.jsonl")
	os.WriteFile(a, []byte(`{"id":"x1","q":"one"}`+"\n"+`{"id":"x2","q":"two"}`+"\n"), 0o644)
	os.WriteFile(b, []byte(`{"id":"x3","q":"three"}`+"\n"), 0o644)
	spec := &Spec{Hub: &Hub{ID: "owner/set", Split: "test"}, ID: "id", Fields: map[string]string{"question": "q"}, Filter: `id != "x2"`}
	if _, err := Load(spec, dir); err == nil || !strings.Contains(err.Error(), "not fetched") {
		t.Fatalf("unresolved: %v", err)
	}
	spec.Files = []string{a, b}
	items, err := Load(spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].ID != "x1" || items[1].ID != "x3" || items[1].Fields["question"] != "three" {
		t.Fatalf("items %+v", items)
	}
}
