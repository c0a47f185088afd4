// Package pipeline is the engine: it runs a loaded study's cases and writes
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
// What the engine owns, by file:
//
//   - the run: engine.go (NewEngine, Run, the summary), walk.go (WalkCase:
//     a case walked on a ReplySource, no call sent), waves.go (concurrency
//     and batch waves), budget.go (the spend cap), stream.go (a finished
//     case counted and its row sent to the writer at once), caseorder.go
//     (rows written in case order, those waiting for an earlier case held
//     or spilled), errclass.go (ErrorClass), livestats.go
//     and trace.go (the progress counters and the trace column);
//   - transport wiring: connect.go (API keys, one Doer per model),
//     ratelimits.go (accounts shared by models on one key), tokens.go
//     (request tokens for the rate limiter and plan), sharedcache.go,
//     engineshared.go and cacheimport.go (the response cache runs share);
//   - reuse: reuse.go (rows kept from an earlier apply of the same config,
//     keyed by spec's results key);
//   - the output writers: output.go and columns.go (results.parquet and
//     calls.parquet, the manifest), flatwriter.go and flatcols.go (the
//     flat columns beside results.parquet's JSON ones), outset.go and outputset.go (a run folder's generations,
//     switched in once complete), scorer.go (the Scorer interface and
//     Written), rescore.go (RescoreFromJournal: every case, judge
//     included, walked on the journal).
//
// The metrics are not computed here: once results.parquet is written the
// engine hands it (a Written) to the Scorer it was given in
// Options.Scorer, and refuses to start a study with metric blocks without
// one. Package scoring (pipeline/scoring) is that scorer.
//
// The parts that stand alone live in subpackages, imported by this one and
// importing nothing of it:
//
//	spec        the run file decoded and validated: the Study, its cases, the registries
//	yamlstrict  strict YAML decoding, field specs, diagnostics
//	journal     the append-only record of model calls
//	parquetio   the Parquet writer and readers of the output files
//	llm         the provider-neutral request and response
//	transport   rate limit and retry between the engine and a provider
//	providers   llm.Provider on the official SDKs
//	batch       provider batch APIs, in waves
//	scripted    a deterministic offline provider declared in YAML
//	fake        the providers' HTTP APIs on loopback, for tests
//	dataset     loading a task's items from a data file
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
package pipeline
