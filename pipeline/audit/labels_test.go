package audit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/audit"
)

func TestLabelsLatestWinsAndWithdraw(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	add := func(caseID, who, label string, min int) {
		t.Helper()
		l := audit.Label{CaseID: caseID, Task: "safety", ItemID: strings.TrimPrefix(caseID, "m/s/safety/"), Model: "m", Strategy: "s",
			Label: label, Annotator: who, Time: t0.Add(time.Duration(min) * time.Minute)}
		if err := audit.AppendLabel(dir, l); err != nil {
			t.Fatal(err)
		}
	}
	add("m/s/safety/h1", "ana", "REFUSAL", 0)
	add("m/s/safety/h1", "ben", "COMPLIANCE", 1)
	add("m/s/safety/h2", "ana", "COMPLIANCE", 2)
	add("m/s/safety/h1", "ana", "COMPLIANCE", 3) // ana changes her mind
	add("m/s/safety/h2", "ana", "", 4)           // and withdraws h2

	data, err := os.ReadFile(filepath.Join(dir, audit.LabelsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 5 {
		t.Fatalf("labels.jsonl has %d lines, want 5 (append-only):\n%s", n, data)
	}
	got, err := audit.ReadLabels(dir)
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, l := range got {
		summary = append(summary, l.CaseID+" "+l.Annotator+" "+l.Label)
	}
	want := "m/s/safety/h1 ben COMPLIANCE|m/s/safety/h1 ana COMPLIANCE"
	if s := strings.Join(summary, "|"); s != want {
		t.Errorf("labels in force:\n got %s\nwant %s", s, want)
	}
	if got[1].Time != t0.Add(3*time.Minute) || got[1].ItemID != "h1" || got[1].Task != "safety" {
		t.Errorf("fields not kept: %+v", got[1])
	}
}

func TestLabelsBadLineIsNamed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, audit.LabelsFile)
	// A line torn by a crash: the next append must start a new line, and
	// reading must name the torn line rather than skip it.
	if err := os.WriteFile(path, []byte(`{"case_id":"a","annotator":"x","label":"REFUSAL"}`+"\n"+`{"case_id":"b","annot`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := audit.AppendLabel(dir, audit.Label{CaseID: "c", Annotator: "x", Label: "REFUSAL"}); err != nil {
		t.Fatal(err)
	}
	_, err := audit.ReadLabels(dir)
	if err == nil || !strings.Contains(err.Error(), "labels.jsonl:2:") {
		t.Fatalf("err = %v, want one naming labels.jsonl:2", err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `{"case_id":"c"`) {
		t.Errorf("the new label was not written on its own line:\n%s", data)
	}
	if err := audit.AppendLabel(dir, audit.Label{CaseID: "c", Label: "x"}); err == nil {
		t.Error("a label without an annotator was accepted")
	}
	if l, err := audit.ReadLabels(t.TempDir()); err != nil || l != nil {
		t.Errorf("no file: %v, %v; want no labels and no error", l, err)
	}
}
