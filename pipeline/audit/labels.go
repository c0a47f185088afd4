package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LabelsFile is the run folder's human labels: append-only JSON lines that
// promoral view writes and metrics read; apply never rewrites it.
const LabelsFile = "labels.jsonl"

// Label is one person's verdict on one case (e.g. the safety judge's audit
// queue). The latest line per (case_id, annotator) wins; a line with an
// empty label withdraws that annotator's earlier label.
type Label struct {
	CaseID    string    `json:"case_id"`
	Task      string    `json:"task"`
	ItemID    string    `json:"item_id"`
	Model     string    `json:"model"`
	Strategy  string    `json:"strategy"`
	Label     string    `json:"label"`
	Annotator string    `json:"annotator"`
	Time      time.Time `json:"time"`
	Note      string    `json:"note"`
}

// AppendLabel adds one line to dir/labels.jsonl and syncs it to disk before
// returning, so a label the page showed as saved survives a crash.
func AppendLabel(dir string, l Label) error {
	if l.CaseID == "" || l.Annotator == "" {
		return fmt.Errorf("a label needs a case_id and an annotator")
	}
	if l.Time.IsZero() {
		l.Time = time.Now().UTC()
	}
	line, err := json.Marshal(l)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, LabelsFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cannot save the label: %w", err)
	}
	defer f.Close()
	// A line torn by a crash must not swallow the next one: start afresh.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("cannot save the label to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot sync %s: %w", path, err)
	}
	return f.Close()
}

// ReadLabels returns the labels in force in dir/labels.jsonl: the latest
// line per (case_id, annotator), withdrawn ones left out, in the order of
// those latest lines. A missing file is no labels. A line that does not
// parse is an error naming the file and line: a label is never dropped
// silently.
func ReadLabels(dir string) ([]Label, error) {
	path := filepath.Join(dir, LabelsFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type key struct{ c, a string }
	latest := map[key]int{}
	var all []Label
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var l Label
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			if derr := dec.Decode(&l); derr != nil {
				return nil, fmt.Errorf("%s:%d: %v (fix or delete the line; every other line is kept)", path, n, derr)
			}
			if l.CaseID == "" || l.Annotator == "" {
				return nil, fmt.Errorf("%s:%d: case_id and annotator are required", path, n)
			}
			k := key{l.CaseID, l.Annotator}
			if i, ok := latest[k]; ok {
				all[i].CaseID = "" // superseded
			}
			latest[k] = len(all)
			all = append(all, l)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out := all[:0]
	for _, l := range all {
		if l.CaseID != "" && strings.TrimSpace(l.Label) != "" {
			out = append(out, l)
		}
	}
	return out, nil
}
