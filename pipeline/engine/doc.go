// Package engine runs a loaded study's cases and writes
// a run folder's outputs. Data flows one way:
//
//	run file ─spec─▶ Study ─▶ cases ─engine─▶ journal ─▶ results, calls ─Scorer─▶ metrics
//
// The study comes from package spec (pipeline/spec), which decodes and
// validates the run file and the files it names, builds the matrix of
// cases, and holds the stage and metric registries and spec.Exec, the
// interface a stage sees of one case in flight. This package imports spec;
// spec imports nothing of it. The engine implements spec.Exec with its own
// running state of a case (caseexec.go: outputs, visits, spend, trace),
// and walks the strategy graph (and the task's judge graph) over it; it
// knows no stage kind by name.
//
// What the engine owns:
//
//   - the run: NewEngine, Run and the summary; WalkCase (a case walked on a
//     ReplySource, no call sent); concurrency and the batch waves; the
//     spend cap; each finished case counted and its row sent to the writer
//     at once, in case order (rows waiting for an earlier case held or
//     spilled); ErrorClass; the progress counters and the trace column;
//   - transport wiring: API keys and one transport.Doer per model, the
//     rate-limit accounts shared by models on one key, request tokens for
//     the rate limiter and the plan, and the response cache runs share;
//   - reuse: rows kept from an earlier apply of the same config, keyed by
//     spec's results key;
//   - the output writers: results.parquet (its JSON columns and the flat
//     columns beside them), calls.parquet and the manifest; OutputSet, a
//     run folder's generations, switched in once complete; the Scorer
//     interface and Written; RescoreFromJournal (every case, judge
//     included, walked on the journal).
//
// The metrics are not computed here: once results.parquet is written the
// engine hands it (a Written) to the Scorer it was given in
// Options.Scorer, and refuses to start a study with metric blocks without
// one. Package scoring (pipeline/scoring) is that scorer.
//
// The parts that stand alone live in subpackages that import nothing of
// it, directly or not (the engine imports some of them):
//
//	spec        the run file decoded and validated: the Study, its cases, the registries
//	yamlstrict  strict YAML decoding, field specs, diagnostics
//	journal     the append-only record of model calls
//	parquetio   the Parquet writer and readers of the output files
//	llm         the provider-neutral request and response
//	transport   a model's calls: the Doer contract, rate limit and retry
//	providers   llm.Provider on the official SDKs
//	batch       provider batch APIs, in waves: a transport.Waver
//	scripted    a deterministic offline provider declared in YAML
//	simulated   an offline provider playing a model of known accuracy
//	fake        the providers' HTTP APIs on loopback, for tests
//	dataset     loading a task's items from a data file
//	hub         datasets fetched from the Hugging Face hub, pinned, verified
//	publish     a run folder put on the Hugging Face hub
//	parse       typed fields from a reply's free text
//	secret      keeping credentials out of everything written
//
// Two packages sit above it and use only its exported API: review
// (pipeline/review: plan, diff of two configs or two run folders, merge of
// shards) and scoring (pipeline/scoring). Nothing here imports either; nor
// audit or stats, which they use. Review reads a loaded spec.Study:
// WalkCase walks a case on a ReplySource (the journal, then the shared
// cache) without a call, spec.ShapeOf gives a strategy's calls at best and
// at worst, and an OutputSet writes and switches in a run folder's outputs
// from rows merge already has.
package engine
