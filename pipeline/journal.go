package pipeline

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// Record is one line of the journal: one attempt at one model call. Only
// records without an error serve as cache entries; failed attempts are kept
// so every attempt is accounted for, but are never replayed.
type Record struct {
	Key       string        `json:"k"`
	Model     string        `json:"m"`
	Case      string        `json:"c"`
	Stage     string        `json:"s"`
	Attempt   int           `json:"a"`
	Time      time.Time     `json:"t"`
	LatencyMS float64       `json:"l"`
	Resp      *llm.Response `json:"r,omitempty"`
	Err       string        `json:"e,omitempty"`
}

type span struct {
	off int64
	n   int32
}

// Journal is the append-only record of every model call of a run. A call is
// appended (one write(2) of one line) before its result is used, so a process
// killed at any instant loses at most the call in flight; a torn last line is
// cut off when the journal is reopened.
type Journal struct {
	path  string
	mu    sync.Mutex
	f     *os.File
	size  int64
	index map[[32]byte]span
	fsync bool
	ro    bool
	// Loaded counts what was on disk when the journal was opened.
	Loaded, LoadedErrors int
}

// OpenJournal opens (creating if needed) the journal at path and indexes its
// successful calls. It takes an exclusive lock so two runs cannot write the
// same journal.
func OpenJournal(path string, fsync bool) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot open the journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use by another promoral process (wait for it to finish)", path)
	}
	j := &Journal{path: path, f: f, index: map[[32]byte]span{}, fsync: fsync}
	if err := j.load(); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// OpenJournalReadOnly indexes a journal without locking or changing it, so
// `plan` can read it while an apply is writing. A missing file is an empty
// journal.
func OpenJournalReadOnly(path string) (*Journal, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return &Journal{path: path, index: map[[32]byte]span{}, ro: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the journal: %w", err)
	}
	j := &Journal{path: path, f: f, index: map[[32]byte]span{}, ro: true}
	if err := j.load(); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

func (j *Journal) load() error {
	r := bufio.NewReaderSize(j.f, 1<<20)
	var off int64
	var probe struct {
		Key string `json:"k"`
		Err string `json:"e"`
	}
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] != '\n' {
			// A torn write from a killed process: drop it.
			break
		}
		if len(line) > 0 {
			key, failed, ok := quickProbe(line)
			if !ok {
				probe.Key, probe.Err = "", ""
				if jerr := json.Unmarshal(line, &probe); jerr != nil {
					return fmt.Errorf("%s: byte %d: the journal has a damaged line (%v); move the file away to start over", j.path, off, jerr)
				}
				key, failed = []byte(probe.Key), probe.Err != ""
			}
			var k [32]byte
			if _, herr := hex.Decode(k[:], key); herr != nil || len(key) != 64 {
				return fmt.Errorf("%s: byte %d: bad key %q in the journal", j.path, off, key)
			}
			if !failed {
				if _, dup := j.index[k]; !dup {
					j.index[k] = span{off, int32(len(line))}
				}
				j.Loaded++
			} else {
				j.LoadedErrors++
			}
			off += int64(len(line))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the journal: %w", err)
		}
	}
	j.size = off
	if j.ro {
		return nil
	}
	if err := j.f.Truncate(off); err != nil {
		return fmt.Errorf("cannot trim a torn last line from the journal: %w", err)
	}
	_, err := j.f.Seek(off, io.SeekStart)
	return err
}

// quickProbe reads the key and the error flag of a journal line without a
// full JSON decode: Append writes the key first, and a top-level "e" key
// cannot occur inside a JSON string (its quotes would be escaped). It
// reports ok=false for anything unusual, which falls back to encoding/json.
func quickProbe(line []byte) (key []byte, failed, ok bool) {
	const head = `{"k":"`
	if len(line) < len(head)+65 || string(line[:len(head)]) != head || line[len(head)+64] != '"' || !json.Valid(line) {
		return nil, false, false
	}
	return line[len(head) : len(head)+64], bytes.Contains(line, []byte(`,"e":"`)), true
}

func parseKey(key string) ([32]byte, error) {
	var k [32]byte
	_, err := hex.Decode(k[:], []byte(key))
	return k, err
}

// Has reports whether a successful call with this key is journaled.
func (j *Journal) Has(key string) bool {
	k, err := parseKey(key)
	if err != nil {
		return false
	}
	j.mu.Lock()
	_, ok := j.index[k]
	j.mu.Unlock()
	return ok
}

// Lookup returns the journaled successful call for a key.
func (j *Journal) Lookup(key string) (*Record, bool, error) {
	k, err := parseKey(key)
	if err != nil {
		return nil, false, err
	}
	j.mu.Lock()
	sp, ok := j.index[k]
	j.mu.Unlock()
	if !ok || j.f == nil {
		return nil, false, nil
	}
	buf := make([]byte, sp.n)
	if _, err := j.f.ReadAt(buf, sp.off); err != nil {
		return nil, false, fmt.Errorf("reading the journal: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(buf, &rec); err != nil {
		return nil, false, fmt.Errorf("%s: byte %d: damaged journal record: %v", j.path, sp.off, err)
	}
	return &rec, true, nil
}

// Append writes one record as one line and, for a success, indexes it.
func (j *Journal) Append(rec *Record) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return err
	}
	line := buf.Bytes()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil || j.ro {
		return errors.New("the journal is closed or read-only")
	}
	if _, err := j.f.Write(line); err != nil {
		return fmt.Errorf("writing the journal: %w", err)
	}
	if j.fsync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("syncing the journal: %w", err)
		}
	}
	if rec.Err == "" {
		k, err := parseKey(rec.Key)
		if err != nil {
			return err
		}
		if _, dup := j.index[k]; !dup {
			j.index[k] = span{j.size, int32(len(line))}
		}
	}
	j.size += int64(len(line))
	return nil
}

// Len is the number of distinct successful calls journaled.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.index)
}

// Close flushes to disk and releases the lock.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	if j.ro {
		err := j.f.Close()
		j.f = nil
		return err
	}
	err := j.f.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f = nil
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}

// Each calls fn for every successful record, in file order.
func (j *Journal) Each(fn func(*Record)) error {
	if j.f == nil {
		return nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(j.f, 0, j.size), 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if _, failed, ok := quickProbe(line); !ok || !failed {
				var rec Record
				if json.Unmarshal(line, &rec) == nil && rec.Err == "" && rec.Resp != nil {
					fn(&rec)
				}
			}
		}
		if err != nil {
			return nil
		}
	}
}
