package engine_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/runfolder/casetrace"
)

// results.parquet carries, per case, the item's fields, the task subsets
// it is in, and the trace of its stages: each visit in order, what the
// stage published (long text clipped), and the extract stage's notes
// (which reply it read; why it read no label).
func TestResultsTraceItemSubsets(t *testing.T) {
	task := strings.Replace(studytest.TaskYAML, "blocks:", "subsets:\n  harm: item.text matches \"stole|hit|lied\"\n  short: len(item.text) < 15\nblocks:", 1)
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
		"configs/tasks/toy.yaml": task,
		"configs/run.yaml": `name: traced
models:
  - name: bot
    provider: scripted
    script:
      replies:
        - match: "Are you sure"
          text: "Answer: {{if contains .all \"stole\"}}fine{{else}}wrong{{end}}"
        - match: "read a book"
          text: "I considered it at length, weighing every side of it, and then some more, at great length.\nVerdict: fine"
        - text: "Confidence: 0.8\nAnswer: {{if find \"(stole|lied|hit)\" .last}}wrong{{else}}not wrong{{end}}"
tasks: [toy]
strategies: [one_shot, loop]
`,
	}))
	out := filepath.Join(t.TempDir(), "out")
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	rows := map[string]map[string]any{}
	if err := parquetio.Scan(filepath.Join(out, "results.parquet"), []string{"case_id", "item", "subsets", "trace", "parsed"}, nil,
		func(r map[string]any) { rows[r["case_id"].(string)] = r }); err != nil {
		t.Fatal(err)
	}

	a := rows["bot/loop/toy/a"]
	var item map[string]any
	if err := json.Unmarshal([]byte(a["item"].(string)), &item); err != nil || item["text"] != "I stole a bike." || item["gold"] != "1" {
		t.Errorf("item = %v (%v), want every field of the item", a["item"], err)
	}
	if a["subsets"] != `["harm"]` {
		t.Errorf("subsets of a = %v, want [\"harm\"]", a["subsets"])
	}
	if b := rows["bot/loop/toy/b"]; b["subsets"] != `["short"]` {
		t.Errorf("subsets of b = %v, want [\"short\"]", b["subsets"])
	}

	steps, err := casetrace.Read(a["trace"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, s := range steps {
		seq = append(seq, s.Stage+"#"+string(rune('0'+s.Visit)))
	}
	// a: the first answer is "wrong", every re-ask says "fine": the loop
	// runs to its bound of three.
	want := "ask#1 parse#1 again#1 again_parse#1 stable#1 again#2 again_parse#2 stable#2 again#3 again_parse#3 stable#3"
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("trace of a:\n got %s\nwant %s", got, want)
	}
	if steps[4].Next != "again" || steps[1].Next != "" {
		t.Errorf("the branch's choice is not recorded: %+v / %+v", steps[4], steps[1])
	}
	parse := steps[1]
	if parse.Out["label"] != "bad" || parse.Out["label_rule"] != "prefix:Answer" || parse.Note["source"] != "ask" {
		t.Errorf("parse step = %+v, want label bad by prefix:Answer from ask", parse)
	}
	if ag := steps[3]; ag.Out["label"] != "fine" || ag.Note["source"] != "again" {
		t.Errorf("again_parse step = %+v", ag)
	}

	f := rows["bot/one_shot/toy/f"]
	if f["parsed"] != false {
		t.Fatalf("f parsed: %v", f)
	}
	steps, _ = casetrace.Read(f["trace"].(string))
	if len(steps) != 2 {
		t.Fatalf("trace of f: %+v", steps)
	}
	if txt, _ := steps[0].Out["text"].(string); !strings.HasSuffix(txt, "bytes)") || len(txt) > 60 {
		t.Errorf("a long reply is not clipped in the trace: %q", txt)
	}
	miss, _ := steps[1].Note["miss"].(map[string]any)
	if miss["shape"] != "verdict: ‹label›" || miss["rule"] != "prefix:Answer" || !strings.Contains(miss["fix"].(string), `prefix: "Verdict"} reads this reply as fine`) {
		t.Errorf("miss note of f = %v", miss)
	}
	if steps2, _ := casetrace.Read(rows["bot/one_shot/toy/e"]["trace"].(string)); steps2[1].Note["miss"] != nil {
		t.Errorf("a parsed reply has a miss note: %+v", steps2[1])
	}
}

// The item and subsets columns of items whose fields wait in the dataset's
// store (a large dataset), written by the workers as cases finish: the same
// values as for items held in memory.
func TestResultsItemSubsetsOfStoredItems(t *testing.T) {
	defer func(v int64) { dataset.SpillAbove = v }(dataset.SpillAbove)
	task := strings.Replace(studytest.TaskYAML, "blocks:", "subsets:\n  harm: item.text matches \"stole|hit|lied\"\n  short: len(item.text) < 15\nblocks:", 1)
	run := `name: stored
models:
  - {name: bot, provider: scripted, script: {replies: [{text: "Confidence: 0.8\nAnswer: wrong"}]}}
tasks: [toy]
strategies: [one_shot]
settings: {concurrency: 8}
`
	read := func(spill int64) map[string]map[string]any {
		dataset.SpillAbove = spill
		dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/tasks/toy.yaml": task, "configs/run.yaml": run}))
		st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
		stored := 0
		for _, it := range st.Tasks[0].Items {
			if it.Fields == nil {
				stored++
			}
		}
		if (spill == 0) != (stored == len(st.Tasks[0].Items)) {
			t.Fatalf("spill above %d: %d of %d items in the store", spill, stored, len(st.Tasks[0].Items))
		}
		out := filepath.Join(t.TempDir(), "out")
		studytest.Apply(t, st, out)
		rows := map[string]map[string]any{}
		if err := parquetio.Scan(filepath.Join(out, "results.parquet"), []string{"case_id", "item", "subsets"}, nil,
			func(r map[string]any) { rows[r["case_id"].(string)] = r }); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	inMemory, stored := read(1<<40), read(0)
	if len(stored) == 0 || len(stored) != len(inMemory) {
		t.Fatalf("%d rows from stored items, %d from items in memory", len(stored), len(inMemory))
	}
	for id, r := range inMemory {
		s := stored[id]
		if s["item"] != r["item"] || s["subsets"] != r["subsets"] || r["item"] == nil {
			t.Errorf("%s: stored item gives %v %v, in memory %v %v", id, s["item"], s["subsets"], r["item"], r["subsets"])
		}
	}
	if a := stored["bot/one_shot/toy/a"]; a["subsets"] != `["harm"]` {
		t.Errorf("subsets of a stored item = %v, want [\"harm\"]", a["subsets"])
	}
}
