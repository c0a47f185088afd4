// Package pipeline loads a study and runs it: spec loading and validation,
// the strategy graph, the engine that walks each case, planning, scoring and
// the review verbs (plan, diff, merge). Data flows one way through it:
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
// Within this package the files group by the same flow:
//
//   - spec: spec.go, load.go, task.go, strategy.go, build.go, registry.go,
//     study.go, names.go, schema.go, typecheck.go, metric.go, blocks.go,
//     factors.go, human.go, subsetmarks.go, fasttemplate.go, dryrun.go;
//   - engine: engine.go, exec.go, connect.go, waves.go, budget.go,
//     selection.go, reuse.go, reusekey.go, stream.go, errclass.go,
//     livestats.go, trace.go, output.go, columns.go, outset.go,
//     readresults.go;
//   - scoring: score.go, rescore.go;
//   - review: plan.go, tokens.go, diff.go, diffcost.go, rundiff.go, merge.go.
//
// Stage kinds (package stages) register themselves here and see a case
// through Exec; the engine knows no stage kind by name.
package pipeline
