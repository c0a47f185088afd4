// Package runfolder owns the run folder as a format: what `promoral apply`
// writes and every reader (scoring, review, report, view, export) reads.
// It holds the rows of results.parquet, calls.parquet and metrics.parquet
// with each column declared once (name, type, doc and how a row gives its
// value), the trace a results row carries, the journal's record, the
// folder's layout and the readers. The manifest (with its format version),
// the selection, the block policies and what a block declares for the
// report are in the subpackage manifest, which imports no Parquet: stage
// and metric kinds name them without building the readers. It sits below the engine: it imports no part of it, nor any
// provider SDK, so a tool that only reads runs does not build the engine.
//
// Conventions:
//
//   - A column's value is null where its accessor returns nil; the row
//     types say, field by field, which zero value stands for null.
//   - A Col's Doc starting "(JSON) " marks a string column holding JSON
//     text; docs/outputs.md's column tables are generated from the Docs
//     (docs_test.go's DocTables; go test ./runfolder -update rewrites them).
//   - manifest.FormatVersion is written in manifest.json as
//     format_version. A folder without it is format 1 and reads as format
//     2 does; one of a later format than the package knows is refused by
//     manifest.Read with both versions named.
package runfolder
