// Package pipeline loads a study and runs it: spec loading and validation,
// the strategy graph, the engine that walks each case, the output set and
// scoring. Data flows one way through it:
//
//	run file ─load─▶ Study ─plan─▶ cases ─engine─▶ journal ─▶ results, calls ─▶ metrics
//
// The parts that stand alone live in subpackages, each imported by this one
// and importing nothing of it:
//
//	yamlstrict  strict YAML decoding, field specs, diagnostics
//	journal     the append-only record of model calls
//	parquetio   the Parquet writer and readers of the output files
//	audit       the human labels file
//	llm         the provider-neutral request and response
//	transport   rate limit and retry between the engine and a provider
//	providers   llm.Provider on the official SDKs
//	batch       provider batch APIs, in waves
//	scripted    a deterministic offline provider declared in YAML
//	fake        the providers' HTTP APIs on loopback, for tests
//	dataset     loading a task's items from a data file
//	parse       typed fields from a reply's free text
//	stats       the statistics behind the metric stages
//	secret      keeping credentials out of everything written
//
// The review verbs live above it, in package review (pipeline/review):
// plan, diff of two configs or two run folders, and merge of shards. Review
// imports this package and nothing here imports review; it reads a loaded
// Study and works through this package's exported API only: WalkCase walks
// a case on a ReplySource (the journal, then the shared cache) without a
// call, ShapeOf gives a strategy's calls at best and at worst, and an
// OutputSet writes and switches in a run folder's outputs from rows merge
// already has.
//
// Within this package the files group by the same flow:
//
//   - spec: spec.go, load.go, task.go, strategy.go, build.go, registry.go,
//     study.go, names.go, schema.go, typecheck.go, metric.go, blocks.go,
//     factors.go, human.go, subsetmarks.go, fasttemplate.go, dryrun.go,
//     shape.go, tokens.go;
//   - engine: engine.go, exec.go, walk.go, connect.go, waves.go, budget.go,
//     selection.go, reuse.go, reusekey.go, stream.go, errclass.go,
//     livestats.go, trace.go, output.go, columns.go, outset.go,
//     outputset.go, readresults.go;
//   - scoring: score.go, rescore.go.
//
// dryrun.go stays here because load.go calls it to validate templates;
// tokens.go because the rate limiter counts request tokens with it;
// cacheimport.go because it reads the shared cache's internals.
//
// Stage kinds (package stages) register themselves here and see a case
// through Exec; the engine knows no stage kind by name.
package pipeline
