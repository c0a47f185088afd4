package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// FileName is the batch record in a run folder.
const FileName = "batches.jsonl"

// Entry kinds, in the order a job goes through them.
const (
	// EntrySubmit is written (and fsynced) before anything is uploaded:
	// the job's name, every line's custom id and cache key.
	EntrySubmit = "submit"
	// EntryCreated records the provider's id once the job exists.
	EntryCreated = "created"
	// EntryAbandoned closes a job that was never created (the upload or the
	// creation failed, or no provider job carries its name).
	EntryAbandoned = "abandoned"
	// EntryEnded is written once every line of a finished job is journaled
	// (or was found failed, to be sent again when a case asks).
	EntryEnded = "ended"
	// EntryCancel records that `promoral batches --cancel` asked the
	// provider to stop the job.
	EntryCancel = "cancel"
)

// Entry is one line of batches.jsonl. The file is append-only: a job's
// story is the sequence of its entries.
type Entry struct {
	T     string    `json:"t"`
	Batch string    `json:"batch"`
	Time  time.Time `json:"time"`
	ID    string    `json:"id,omitempty"`
	Model string    `json:"model,omitempty"`
	// Provider, BaseURL and KeyEnv let `promoral batches` reach the job
	// from the run folder alone. KeyEnv names the variable, never the key.
	Provider string    `json:"provider,omitempty"`
	BaseURL  string    `json:"base_url,omitempty"`
	KeyEnv   string    `json:"key_env,omitempty"`
	Lines    []LineRec `json:"lines,omitempty"`
	State    string    `json:"state,omitempty"`
	OK       int       `json:"ok,omitempty"`
	Failed   int       `json:"failed,omitempty"`
	Note     string    `json:"note,omitempty"`
}

// LineRec is one request of a job.
type LineRec struct {
	ID      string `json:"id"`
	Key     string `json:"key"`
	Samples int    `json:"n,omitempty"`
	// Attempt is the request's attempt number this line is.
	Attempt int `json:"a,omitempty"`
}

// Job is a batch job as batches.jsonl tells it.
type Job struct {
	Name, ID, Model, Provider, BaseURL, KeyEnv string
	Submitted                                  time.Time
	Lines                                      []LineRec
	// Status is submitting (no id recorded), in_flight, ended or abandoned.
	Status string
	// State is the provider's final state of an ended job.
	State      string
	OK, Failed int
	Cancelled  bool
	Note       string
}

// Job statuses.
const (
	StatusSubmitting = "submitting"
	StatusInFlight   = "in_flight"
	StatusEnded      = "ended"
	StatusAbandoned  = "abandoned"
)

// Open reports whether the job may still have lines that no run has
// journaled: it was submitted and has not ended or been abandoned.
func (j *Job) Open() bool { return j.Status == StatusSubmitting || j.Status == StatusInFlight }

// File is a run's batches.jsonl. Every append is one write(2) followed by
// fsync, so a job's entry is on disk before the provider hears of it; a
// torn last line (a process killed mid-write) is ignored when read and cut
// off before the next append.
type File struct {
	path string
	mu   sync.Mutex
	trim bool // the torn tail has been cut
}

// NewFile names the batch record of a run folder; nothing is opened yet.
func NewFile(dir string) *File { return &File{path: filepath.Join(dir, FileName)} }

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Append writes entries as lines and syncs them to disk.
func (f *File) Append(es ...*Entry) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range es {
		if e.Time.IsZero() {
			e.Time = time.Now().UTC()
		}
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fd, err := os.OpenFile(f.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("batch record: %w", err)
	}
	defer fd.Close()
	end, err := fd.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("batch record: %w", err)
	}
	if !f.trim {
		if good, err := goodLength(fd, end); err != nil {
			return err
		} else if good < end {
			if err := fd.Truncate(good); err != nil {
				return fmt.Errorf("batch record: cutting a torn last line: %w", err)
			}
			end = good
		}
		f.trim = true
	}
	if _, err := fd.WriteAt(buf.Bytes(), end); err != nil {
		return fmt.Errorf("batch record %s: %w", f.path, err)
	}
	if err := fd.Sync(); err != nil {
		return fmt.Errorf("batch record %s: %w", f.path, err)
	}
	return nil
}

// goodLength is the length of the file up to its last newline.
func goodLength(fd *os.File, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for off := size; off > 0; {
		n := min(off, chunk)
		off -= n
		if _, err := fd.ReadAt(buf[:n], off); err != nil {
			return 0, fmt.Errorf("batch record: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
	}
	return 0, nil
}

// Read folds the file into jobs in submission order. A missing file has no
// jobs; a damaged line other than a torn last one is an error.
func (f *File) Read() ([]*Job, error) {
	fd, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("batch record: %w", err)
	}
	defer fd.Close()
	jobs := map[string]*Job{}
	var order []*Job
	r := bufio.NewReaderSize(fd, 1<<20)
	lineNo := 0
	for {
		line, rerr := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			lineNo++
			var e Entry
			if err := json.Unmarshal(line, &e); err != nil {
				return nil, fmt.Errorf("%s:%d: a damaged entry (%v); move the file away only if no batch job of this run is in flight", f.path, lineNo, err)
			}
			j := jobs[e.Batch]
			if j == nil {
				j = &Job{Name: e.Batch, Status: StatusSubmitting}
				jobs[e.Batch] = j
				order = append(order, j)
			}
			j.apply(&e)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, fmt.Errorf("batch record: %w", rerr)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].Submitted.Before(order[b].Submitted) })
	return order, nil
}

// Known lists the provider ids of every job the record holds.
func (f *File) Known() map[string]bool {
	known := map[string]bool{}
	jobs, _ := f.Read()
	for _, j := range jobs {
		if j.ID != "" {
			known[j.ID] = true
		}
	}
	return known
}

func (j *Job) apply(e *Entry) {
	switch e.T {
	case EntrySubmit:
		j.Model, j.Provider, j.BaseURL, j.KeyEnv = e.Model, e.Provider, e.BaseURL, e.KeyEnv
		j.Submitted, j.Lines = e.Time, e.Lines
	case EntryCreated:
		j.ID, j.Status = e.ID, StatusInFlight
		if e.Note != "" {
			j.Note = e.Note
		}
	case EntryAbandoned:
		j.Status, j.Note = StatusAbandoned, e.Note
	case EntryEnded:
		j.Status, j.State, j.OK, j.Failed = StatusEnded, e.State, e.OK, e.Failed
		if e.Note != "" {
			j.Note = e.Note
		}
	case EntryCancel:
		j.Cancelled = true
	}
}
