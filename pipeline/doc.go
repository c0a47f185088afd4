// Package pipeline owns a study and its run: the spec (decoding, validation,
// names, schema, the Study with its matrix of cases) and the engine that
// walks each case, journals its calls and writes the output set. Data flows
// one way through it:
//
//	run file ─load─▶ Study ─plan─▶ cases ─engine─▶ journal ─▶ results, calls ─Scorer─▶ metrics
//
// The metrics are not computed here: once results.parquet is written the
// engine hands it (a Written) to the Scorer it was given in
// Options.Scorer, and refuses to start a study with metric blocks without
// one. Package scoring (pipeline/scoring) is that scorer: it reads the
// results back, runs the metric blocks, and owns reducers, intervals,
// human labels and re-scoring from a journal. Metric kinds are declared
// here (MetricConfig, Metric, ResultSet, MetricRow) and registered like
// stage kinds.
//
// The parts that stand alone live in subpackages, each imported by this one
// and importing nothing of it:
//
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
// audit or stats, which they use. Review reads a loaded Study: WalkCase
// walks a case on a ReplySource (the journal, then the shared cache)
// without a call, ShapeOf gives a strategy's calls at best and at worst,
// and an OutputSet writes and switches in a run folder's outputs from rows
// merge already has.
//
// Within this package the files group by the same flow:
//
//   - spec: spec.go, load.go, task.go, strategy.go, build.go, registry.go,
//     study.go, names.go, schema.go, typecheck.go, metric.go, reduce.go,
//     blocks.go, factors.go, human.go, human3.go, subsetmarks.go,
//     fasttemplate.go, dryrun.go, shape.go, tokens.go;
//   - engine: engine.go, exec.go, walk.go, connect.go, waves.go, budget.go,
//     selection.go, reuse.go, reusekey.go, stream.go, errclass.go,
//     livestats.go, trace.go, output.go, columns.go, outset.go,
//     outputset.go, scorer.go, rescore.go.
//
// dryrun.go stays here because load.go calls it to validate templates;
// tokens.go because the rate limiter counts request tokens with it;
// cacheimport.go because it reads the shared cache's internals;
// rescore.go (RescoreFromJournal) because it walks every case, judge
// included, on the engine's journal transport.
//
// Stage and metric kinds (package stages) register themselves here and see
// a case through Exec, or the results through a ResultSet; the engine
// knows no kind by name.
package pipeline
