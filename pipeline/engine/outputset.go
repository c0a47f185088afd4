package engine

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// MergeTotals is what the summary of an output set written from other run
// folders' rows takes from their manifests: what was sent and served is
// what those runs did, since the rows alone do not say which calls a case
// found cached.
type MergeTotals struct {
	CallsNew, CallsCached, Attempts int
	// CallsShared sums the runs' calls_shared; SharedCache is their
	// shared cache folder.
	CallsShared int
	SharedCache string
	Shards      []manifest.MergedShard
}

func (mt *MergeTotals) into(sum *Summary) {
	sum.CallsNew, sum.CallsCached, sum.Attempts = mt.CallsNew, mt.CallsCached, mt.Attempts
	sum.CallsShared, sum.SharedCache = mt.CallsShared, mt.SharedCache
	sum.MergedFrom = mt.Shards
}

// OutputSet is a run folder's next output set written from rows the caller
// already has, not from walking cases (merge joins shards with it): the
// calls copied in, each case's Result put in case order, then Commit
// writes results.parquet as an apply writes it, computes the metrics on
// it, writes the manifest and switches the set in. Until then the outputs
// in force stand; Abort drops the set.
type OutputSet struct {
	e     *Engine
	gen   *generation
	calls *parquetio.Writer
	rw    *resultsWriter
	sink  *resultSink
	tl    *tally
	held  []heldCase
}

// OpenOutputSet starts a new output set of st in the run folder out, whose
// journal j (opened read-only by the caller, who closes it after Commit)
// the metrics read transcripts from; sc computes the metrics at Commit
// (nil only for a study without metric blocks). Log takes the warnings
// (nil: none).
func OpenOutputSet(st *spec.Study, out string, j *journal.Journal, sc Scorer, log io.Writer) (*OutputSet, error) {
	if err := needScorer(st, sc); err != nil {
		return nil, err
	}
	e := NewEngine(st, Options{OutDir: out, Log: log, Scorer: sc})
	e.journal = j
	gen, err := newGeneration(out, time.Now())
	if err != nil {
		return nil, err
	}
	calls, err := parquetio.Create(filepath.Join(gen.dir, "calls.parquet"), callColumns, compress.Codecs.Snappy)
	if err != nil {
		os.RemoveAll(gen.dir)
		return nil, err
	}
	rw, err := e.newResultsWriter(filepath.Join(gen.dir, "results.parquet"), "")
	if err != nil {
		calls.Abort()
		os.RemoveAll(gen.dir)
		return nil, err
	}
	planned := 0
	st.EachCase(func(*spec.Case) bool {
		planned++
		return true
	})
	// The rows go out as one process writes them: good rows in case order,
	// errored ones held to the end (writeSet).
	return &OutputSet{e: e, gen: gen, calls: calls, rw: rw, sink: newResultSink(rw, gen.dir, planned, nil, nil), tl: newTally()}, nil
}

// AppendCalls copies every row of the calls.parquet at path into the set's.
func (o *OutputSet) AppendCalls(path string) error {
	var bad error
	vals := make([]any, len(callColumns))
	err := parquetio.Scan(path, nil, nil, func(row map[string]any) {
		if bad != nil {
			return
		}
		for i, c := range callColumns {
			vals[i] = row[c.Name]
		}
		bad = o.calls.Append(vals...)
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// NoteVersion records a model version a provider reported, for the
// manifest's model_versions.
func (o *OutputSet) NoteVersion(model, version string) { o.e.noteVersion(model, version) }

// Put adds case c's result. Cases go in in the study's case order; an
// errored one is held and written after the others, as an apply does.
func (o *OutputSet) Put(c *spec.Case, r spec.Result) {
	if r.Err != "" {
		o.held = append(o.held, heldCase{c, r})
		return
	}
	o.tl.add(c, &r)
	o.sink.put(c.Ordinal, o.e.resultValues(c, &r))
}

// Commit finishes the set and switches it in: results.parquet, the metrics
// computed from it, and the manifest, whose start time is started and
// whose counts of calls are merged's (nil: those of the rows). On an error
// nothing of the set is left.
func (o *OutputSet) Commit(started time.Time, merged *MergeTotals) (*Summary, error) {
	o.e.merged = merged
	sum, err := o.e.writeSet(o.gen, o.calls, o.sink, o.rw, o.held, o.tl, nil, started, nil)
	if err != nil {
		os.RemoveAll(o.gen.dir)
	}
	return sum, err
}

// Abort drops a set not committed: nothing of it is left, and the outputs
// in force stand.
func (o *OutputSet) Abort() {
	o.sink.close()
	o.rw.Abort()
	o.calls.Abort()
	os.RemoveAll(o.gen.dir)
}

// RowResult is a results.parquet row as the Result it was written from,
// with its error, error class, kept_from and trace.
func RowResult(row map[string]any) spec.Result {
	r := resultFromRow(row)
	str := func(k string) string { s, _ := row[k].(string); return s }
	r.Err, r.ErrClass, r.KeptFrom, r.Trace = str("error"), str("error_class"), str("kept_from"), str("trace")
	return r
}
