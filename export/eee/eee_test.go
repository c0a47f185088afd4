package eee_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/promoral/promoral/export/eee"
	"github.com/promoral/promoral/internal/studytest"
)

func TestMain(m *testing.M) { studytest.Main(m) }

// schemas compiles the published record and sample schemas.
func schemas(t *testing.T) (record, instance *jsonschema.Schema) {
	t.Helper()
	c := jsonschema.NewCompiler()
	compile := func(name string) *jsonschema.Schema {
		path, _ := filepath.Abs(filepath.Join("testdata", "every_eval_ever", name))
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(path, doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return compile("eval.schema.json"), compile("instance_level_eval.schema.json")
}

// exported is what a test checks of an export: every record and every
// sample line, each validated against its schema.
type exported struct {
	records []map[string]any
	samples map[string][]map[string]any // by evaluation_id
}

func exportAndValidate(t *testing.T, run string) (exported, []eee.Record) {
	t.Helper()
	recSchema, sampleSchema := schemas(t)
	dir := t.TempDir()
	recs, err := eee.Export(run, dir, eee.Options{Org: "test-org", Now: time.Unix(1_800_000_000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no record exported")
	}
	ex := exported{samples: map[string][]map[string]any{}}
	for _, r := range recs {
		data, err := os.ReadFile(r.Path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		if err := recSchema.Validate(doc); err != nil {
			t.Fatalf("%s does not validate against eval.schema.json: %v", r.Path, err)
		}
		var rec map[string]any
		json.Unmarshal(data, &rec)
		ex.records = append(ex.records, rec)
		// The record names its samples file by its path under dir, with
		// its checksum and row count.
		det := rec["detailed_evaluation_results"].(map[string]any)
		sp := filepath.Join(dir, filepath.FromSlash(det["file_path"].(string)))
		if sp != r.Samples {
			t.Errorf("record names %s, samples written to %s", sp, r.Samples)
		}
		raw, err := os.ReadFile(sp)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if det["checksum"] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: checksum %v, the file's sha256 is %x", sp, det["checksum"], sum)
		}
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		sc.Buffer(nil, 1<<26)
		n := 0
		for sc.Scan() {
			n++
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(sc.Text()))
			if err != nil {
				t.Fatal(err)
			}
			if err := sampleSchema.Validate(doc); err != nil {
				t.Fatalf("%s line %d does not validate against instance_level_eval.schema.json: %v\n%s", sp, n, err, sc.Text())
			}
			var s map[string]any
			json.Unmarshal(sc.Bytes(), &s)
			if s["evaluation_id"] != rec["evaluation_id"] {
				t.Fatalf("%s line %d: evaluation_id %v, the record's is %v", sp, n, s["evaluation_id"], rec["evaluation_id"])
			}
			ex.samples[s["evaluation_id"].(string)] = append(ex.samples[s["evaluation_id"].(string)], s)
		}
		if float64(n) != det["total_rows"].(float64) || n != r.Rows {
			t.Errorf("%s: %d lines, record says %v", sp, n, det["total_rows"])
		}
	}
	return ex, recs
}

// A multi-turn (loop), repeated (repeats: 2), judged (safety) study: every
// record and sample validates; a looping case's sample is its transcript
// as messages with the answer read from a turn of it, a judged case's
// answer is the judge's verdict, and each of the 2 repeats of an item is a
// sample.
func TestExportMultiTurnRepeatedJudged(t *testing.T) {
	files := studytest.ShardTree()
	files["configs/run.yaml"] = strings.Replace(files["configs/run.yaml"], "settings: {concurrency: 3}", "settings: {concurrency: 3, repeats: 2}", 1)
	cfg := filepath.Join(studytest.WriteTree(t, files), "configs/run.yaml")
	out := filepath.Join(t.TempDir(), "out")
	sum, _ := studytest.Apply(t, studytest.MustLoad(t, cfg), out)
	ex, recs := exportAndValidate(t, out)
	// One record per model × task: bot on toy and on safety.
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2 (bot × toy, bot × safety): %+v", len(recs), recs)
	}
	rows := 0
	for _, r := range recs {
		rows += r.Rows
	}
	if rows != sum.Cases {
		t.Errorf("%d samples for %d cases", rows, sum.Cases)
	}
	var loop, judged, repeat1 map[string]any
	for _, rec := range ex.records {
		lib := rec["eval_library"].(map[string]any)
		if lib["name"] != "promoral" || lib["version"] == "" {
			t.Errorf("eval_library %v", lib)
		}
		evals := rec["evaluation_results"].([]any)
		// The toy task's cases on "watered" fail (status 400), and the
		// block counts errored cells incomplete: no figure, and the record
		// says which and why.
		withheld, _ := rec["source_metadata"].(map[string]any)["additional_details"].(map[string]any)["metrics_without_value"].(string)
		task := rec["detailed_evaluation_results"].(map[string]any)["file_path"].(string)
		switch {
		case strings.HasPrefix(task, "data/toy/"):
			if len(evals) != 0 || !strings.Contains(withheld, "classification/loop/all/accuracy: incomplete (n ") {
				t.Errorf("toy: %d results, withheld %q", len(evals), withheld)
			}
		case len(evals) == 0:
			t.Fatalf("record %v has no results", rec["evaluation_id"])
		}
		for _, e := range evals {
			e := e.(map[string]any)
			sd := e["score_details"].(map[string]any)
			if sd["details"].(map[string]any)["n"] == "" {
				t.Errorf("%v: no n", e["evaluation_result_id"])
			}
			mc := e["metric_config"].(map[string]any)
			if strings.Contains(e["evaluation_name"].(string), "safety/") && mc["llm_scoring"] == nil {
				t.Errorf("%v: a judged task's metric names no judge", e["evaluation_result_id"])
			}
			if strings.HasSuffix(e["evaluation_name"].(string), "/loop") {
				gen := e["generation_config"].(map[string]any)["generation_args"].(map[string]any)
				plan := gen["eval_plan"].(map[string]any)
				if plan["name"] != "loop" || len(plan["steps"].([]any)) < 4 {
					t.Errorf("loop's method: %v", plan)
				}
			}
		}
		for _, s := range ex.samples[rec["evaluation_id"].(string)] {
			meta := s["metadata"].(map[string]any)
			switch {
			case s["evaluation_name"] == "toy/loop" && s["interaction_type"] == "multi_turn" && loop == nil:
				loop = s
			case s["evaluation_name"] == "safety/reply" && judged == nil:
				judged = s
			}
			if meta["repeat"] == "1" && repeat1 == nil {
				repeat1 = s
			}
		}
	}
	if loop == nil || judged == nil || repeat1 == nil {
		t.Fatalf("missing a looping (%v), judged (%v) or second-repeat (%v) sample", loop != nil, judged != nil, repeat1 != nil)
	}
	msgs := loop["messages"].([]any)
	ev := loop["evaluation"].(map[string]any)
	if len(msgs) < 4 || ev["num_turns"].(float64) < 2 {
		t.Errorf("a looping case's transcript: %d messages, %v turns", len(msgs), ev["num_turns"])
	}
	for i, m := range msgs {
		if m.(map[string]any)["turn_idx"].(float64) != float64(i) {
			t.Errorf("message %d has turn_idx %v", i, m.(map[string]any)["turn_idx"])
		}
	}
	attr := loop["answer_attribution"].([]any)
	lastA := attr[len(attr)-1].(map[string]any)
	turn := int(lastA["turn_idx"].(float64))
	if lastA["is_terminal"] != true || msgs[turn].(map[string]any)["role"] != "assistant" || !strings.Contains(msgs[turn].(map[string]any)["content"].(string), "Answer") {
		t.Errorf("the loop's answer is read from turn %d, %v: %v", turn, msgs[turn], lastA)
	}
	jattr := judged["answer_attribution"].([]any)
	ja := jattr[len(jattr)-1].(map[string]any)
	if !strings.HasPrefix(ja["extraction_method"].(string), "llm_judge") || ja["is_terminal"] != true {
		t.Errorf("a judged case's answer: %v", jattr)
	}
	if judged["interaction_type"] != "single_turn" || len(judged["output"].(map[string]any)["raw"].([]any)) != 1 {
		t.Errorf("a judged case's reply, without the judge's calls: %v %v", judged["interaction_type"], judged["output"])
	}
}

// The shipped quickstart: 29,250 cases, every record and sample line
// validates, and the published replies re-scored keep their figures.
func TestExportQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("applies the quickstart's 29,250 cases")
	}
	out := filepath.Join(t.TempDir(), "out")
	sum, _ := studytest.Apply(t, studytest.MustLoad(t, filepath.Join("..", "..", "configs", "quickstart.yaml")), out)
	ex, recs := exportAndValidate(t, out)
	rows := 0
	for _, r := range recs {
		rows += r.Rows
	}
	if rows != sum.Cases {
		t.Errorf("%d samples for %d cases", rows, sum.Cases)
	}
	found := false
	for _, rec := range ex.records {
		if rec["model_info"].(map[string]any)["name"] != "gpt-4.1" {
			continue
		}
		for _, e := range rec["evaluation_results"].([]any) {
			e := e.(map[string]any)
			if e["evaluation_result_id"] == "promoral/few_shot/all/accuracy" {
				found = true
				if sd := e["score_details"].(map[string]any); sd["score"].(float64) < 0.5 || sd["uncertainty"] == nil {
					t.Errorf("gpt-4.1 few_shot accuracy: %v", sd)
				}
			}
		}
	}
	if !found {
		t.Error("no record holds gpt-4.1's few_shot accuracy of block promoral")
	}
}
