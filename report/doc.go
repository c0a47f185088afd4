// Package report turns a run folder (results.parquet, calls.parquet,
// metrics.parquet, the metric CSVs and manifest.json) into a static report:
// report.html (one self-contained file that opens offline), report.md, and
// the figures as PNG and SVG under figures/. Every section shows only when
// the run has its data.
//
// Generate reads the run folder and builds the report once as a document
// of sections and blocks (tables, figures, notes, transcripts); the HTML
// and the Markdown writers both write that one document, so the two
// always say the same.
package report
