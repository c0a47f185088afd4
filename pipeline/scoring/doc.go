// Package scoring computes a study's metrics over results already written:
// it never walks a case and never calls a model. An apply, a merge and a
// re-score all end here, and all score the same way, so a figure is the
// same whoever computed it.
//
//	results.parquet ─ReadResultSet─▶ ResultSet ─ComputeScores─▶ Scores ─Write─▶ metrics.parquet, tables (.csv)
//
// What it owns:
//
//   - the read-back (readresults.go): ReadResultSet reads from
//     results.parquet only the columns the metric blocks read, one row group
//     at a time, into the compact rows of a spec.ResultSet, in case
//     order; the subsets column becomes each task's subset marks, so a
//     large dataset's items need not be read again to place them.
//     NewResultSet builds the same set from results in memory.
//   - the blocks (score.go): ComputeScores runs every metric block of the
//     study over the set, after its reducer, and gives each row its block,
//     its unparsed: and errors: policies and a status that agrees with its
//     value; two rows with one key are an error. Score and Scores.Write
//     write metrics.parquet and the blocks' CSV tables, each replacing its
//     old version only once complete.
//   - reducers (reduce.go): the samples of a repeated case made one answer
//     per item (majority, first, any, all) before a block sees them, with
//     majority_ties rows. Rows whose interval treats an item's samples as
//     independent say it is too narrow, unless the kind drew it over items
//     (spec.ClusteredNote).
//   - human labels: the result set's People reads the labels people gave
//     in promoral view, beside the run's journal, so a kind reads them
//     without doing I/O.
//   - re-scoring (rescore.go): ScoreFromJournal scores a study from the
//     replies a journal holds, in memory, and DiffScores compares two score
//     sets row by row; promoral diff shows what a config change does to the
//     numbers with them.
//
// Scoring comes after the engine in the flow and imports it: it reads the
// study, its metric blocks and the row types from package spec
// (pipeline/spec), and the output files through package engine, which
// imports nothing of it. The engine hands what it wrote (a
// engine.Written) to the engine.Scorer it was given; New is the Scorer
// to give it. The metric kinds themselves (package metrics) register with
// spec and compute over a spec.ResultSet; they import nothing of scoring.
package scoring
