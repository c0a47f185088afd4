// Package spec turns a run file and the files it names into a Study: every
// field decoded strictly, every problem reported with its file, line, field
// and what to write instead, and the matrix of cases built. It is the first
// step of the data flow:
//
//	run file ─spec─▶ Study ─▶ cases ─engine─▶ journal ─▶ results, calls ─scoring─▶ metrics
//
// What it owns:
//
//   - loading (load.go, spec.go, task.go, strategy.go, hubdata.go): LoadWith
//     reads the run file, the task, strategy and model files it
//     uses, and the datasets, local or by hub reference (through the
//     dataset.HubSource that pipeline/hub registers: spec does not import
//     the hub client); settings, limits and the run's name are checked
//     there (harden.go);
//   - the study (study.go): models, strategies, tasks with their items, the
//     cells of the matrix and each Case, its ordinal and id; Select narrows
//     it to a Selection (selection.go: cells, item limits, shards);
//   - strategy graphs (build.go, registry.go): the stage kinds registered
//     with Register compile their configs with a Build into Stages, and
//     edges, loops and max_visits bounds are checked; ShapeOf gives a
//     graph's calls at best and at worst (shape.go);
//   - names (names.go): the names a config may refer to, Plural; the
//     near-miss hints are yamlstrict.DidYouMean and NameHint;
//   - expressions and templates (typecheck.go, fasttemplate.go, dryrun.go):
//     compiled and type-checked at load, every template rendered against
//     every item shape before any call (a dry run);
//   - factors, repeats and sweeps (factors.go, factorspec.go, repeats.go,
//     sweep.go): the columns that label each case, derived or declared;
//   - metric blocks as declared (metric.go, blocks.go, reduce.go): the
//     metric kinds registered with RegisterMetric, their configs and the
//     rows they declare, the ResultSet and MetricRow they compute over and
//     into, and the helpers kinds share (SetCI for intervals, the reducers,
//     MajorityLabel);
//   - human verdicts (human.go, human3.go) and subset marks;
//   - the results key (reusekey.go): what a case's result depends on, so
//     the engine can tell when an earlier result still holds.
//
// A stage runs against an Exec (exec.go), the interface of one case in
// flight: it reads Env, publishes its outputs with Set, and makes a model
// call only through Exec.Call. The engine implements Exec and keeps the
// case's running state (outputs, visits, spend, trace) private. A stage
// that fails in a way of its own names the class with a ClassError
// (errclass.go), which the engine records as the case's error_class.
//
// Stage and metric kinds (packages stages and metrics) import this package
// as their contract and register themselves; neither this package nor the
// engine knows a kind by name. It builds light for them: no engine,
// provider SDK, network client or Apache Arrow, directly or not (the hub
// and the Parquet format plug into package dataset from their own
// packages; TestSpecBuildsWithoutHub checks it).
//
// The JSON Schema of every file kind is written from the same field specs
// by package schema (pipeline/spec/schema).
//
// What it does not do: it never calls a model, writes none of a run's outputs and
// computes no metric. It imports nothing of the engine (package engine),
// scoring, review or the stage kinds; each of them imports it.
package spec
