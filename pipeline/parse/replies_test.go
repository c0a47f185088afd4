package parse

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The quickstart re-scores 29,050 published replies with the regex rules of
// configs/tasks/promoral_replies.yaml, and prints that its figures match the
// published ones. Any change to how rules run must leave every one of those
// readings as it was. publishedDigest was computed by the extractor before
// regex rules ran through candidate starts (plain FindAll over the reply);
// updating it needs a reason stronger than speed.
const (
	publishedDigest  = "08f9e6a26dfb19be15d0b7da9c4b49efdc5df8ea807e00010090bf95c4d09ac3"
	publishedReplies = 29050
	publishedLabels  = 28996 // replies with a label read, by the same extractor
	publishedConfs   = 29015 // replies with a confidence read
)

// publishedSpec reads the shipped task's answer space and extraction rules.
func publishedSpec(t testing.TB) (*Spec, *Space) {
	t.Helper()
	data, err := os.ReadFile("../../configs/tasks/promoral_replies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var task struct {
		Answer  Space `yaml:"answer"`
		Extract Spec  `yaml:"extract"`
	}
	if err := yaml.Unmarshal(data, &task); err != nil {
		t.Fatal(err)
	}
	if len(task.Extract.Label) == 0 || len(task.Extract.Confidence) == 0 {
		t.Fatal("promoral_replies.yaml declares no label or confidence rule")
	}
	return &task.Extract, &task.Answer
}

// publishedReplyTexts reads every recorded reply, keyed as the task keys
// them (model, strategy, item).
func publishedReplyTexts(t testing.TB) (ids, replies []string) {
	t.Helper()
	f, err := os.Open("../../data/promoral_runs/ethics_replies.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var row struct {
			Model, Strategy, Reply string
			Item                   json.Number
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("line %d: %v", len(ids)+1, err)
		}
		ids = append(ids, row.Model+"/"+row.Strategy+"/"+row.Item.String())
		replies = append(replies, row.Reply)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ids, replies
}

// writeReading adds everything Extract read from one reply to h.
func writeReading(h hash.Hash, id string, r Result) {
	conf := "-"
	if r.Confidence != nil {
		conf = strconv.FormatFloat(*r.Confidence, 'g', -1, 64)
	}
	fmt.Fprintf(h, "%s\x00%q\x00%t\x00%q\x00%q\x00%s\x00%t\x00%q\x00%q\x00%v\n", id,
		r.Label, r.Parsed, r.LabelRule, r.LabelRaw,
		conf, r.ConfidenceParsed, r.ConfidenceRule, r.ConfidenceRaw, r.Fields)
}

// TestPublishedRepliesDigest fails when any of the shipped replies is read
// differently: another label, confidence, rule or raw text.
func TestPublishedRepliesDigest(t *testing.T) {
	spec, space := publishedSpec(t)
	x, err := Compile(spec, space)
	if err != nil {
		t.Fatal(err)
	}
	ids, replies := publishedReplyTexts(t)
	if len(replies) != publishedReplies {
		t.Fatalf("read %d replies, want %d", len(replies), publishedReplies)
	}
	h := sha256.New()
	labels, confs := 0, 0
	for i, text := range replies {
		r := x.Extract(text)
		if r.Parsed {
			labels++
		}
		if r.ConfidenceParsed {
			confs++
		}
		writeReading(h, ids[i], r)
	}
	if labels != publishedLabels || confs != publishedConfs {
		t.Errorf("%d replies with a label and %d with a confidence, want %d and %d", labels, confs, publishedLabels, publishedConfs)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != publishedDigest {
		t.Errorf("readings of the published replies changed: digest %s, want %s", got, publishedDigest)
	}
}

// BenchmarkPublishedReplies reads every shipped reply once per iteration,
// as the quickstart's re-scoring does.
func BenchmarkPublishedReplies(b *testing.B) {
	spec, space := publishedSpec(b)
	x, err := Compile(spec, space)
	if err != nil {
		b.Fatal(err)
	}
	_, replies := publishedReplyTexts(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range replies {
			x.Extract(text)
		}
	}
}

// The shipped task reads the LAST "Final Answer" line because the recorded
// Value-Grounded replies hold a first judgement and then the final one:
// read for every match (the label rules' default), 11 of them, all
// Value-Grounded, give two different answers and would be unparsed.
func TestPublishedRepliesNeedLast(t *testing.T) {
	spec, space := publishedSpec(t)
	if spec.Label[0].Occurrence != OccurrenceLast {
		t.Fatalf("promoral_replies.yaml's label rule has occurrence %q, want last", spec.Label[0].Occurrence)
	}
	every := *spec
	every.Label = append([]Rule(nil), spec.Label...)
	every.Label[0].Occurrence = ""
	x, err := Compile(&every, space)
	if err != nil {
		t.Fatal(err)
	}
	ids, replies := publishedReplyTexts(t)
	byStrategy := map[string]int{}
	for i, text := range replies {
		if x.Extract(text).Several {
			parts := strings.Split(ids[i], "/")
			byStrategy[parts[1]]++
		}
	}
	if len(byStrategy) != 1 || byStrategy["value_grounded"] != 11 {
		t.Errorf("replies with several answers by strategy: %v, want 11 value_grounded", byStrategy)
	}
}
