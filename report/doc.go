// Package report turns a run folder (results.parquet, calls.parquet,
// metrics.parquet, the metric CSVs and manifest.json) into a static report:
// report.html (one self-contained file that opens offline), report.md, and
// the figures as PNG and SVG under figures/. Every section shows only when
// the run has its data.
//
// Generate reads the run folder and builds the report once as a document
// of sections and blocks (tables, figures, notes, transcripts); the HTML
// and the Markdown writers both write that one document, so the two
// always say the same. The HTML is written through html/template
// (report.html.tmpl), which escapes every value from the run.
//
// The report names no metric kind: what it says of a block (how it
// counts, its bins, what a confidence means, whether its rows measure
// judges or pool tasks) is what the block declares in manifest.json
// (manifest.BlockDraw).
package report
