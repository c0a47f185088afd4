// Package audit keeps the human labels of a run: people's verdicts on cases
// (for example the safety judge's audit queue), given in promoral view and
// read by the metrics that compare judges with people.
//
// Conventions:
//
//   - The labels live in one append-only file per run folder (LabelsFile,
//     JSON lines). Apply never rewrites it; each new label is synced to disk
//     before AppendLabel returns.
//   - The latest line per (case_id, annotator) wins; an empty label
//     withdraws that annotator's earlier one.
//   - A line that does not parse is an error naming the file and line, never
//     dropped; a line torn by a crash does not swallow the next.
//   - Labels name their case, task, item, model and strategy as strings; the
//     package knows nothing else of a study.
package audit
