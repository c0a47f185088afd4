// Package report turns a run folder (results.parquet, calls.parquet,
// metrics.parquet, the metric CSVs and manifest.json) into a static report:
// report.html (one self-contained file that opens offline), report.md, and
// the figures as PNG and SVG under figures/. Every section shows only when
// the run has its data.
//
// Generate reads the run folder (data.go) and builds the report once as a
// document of sections and blocks (document.go); html.go and markdown.go
// write that one document, so report.html and report.md always say the
// same. figures.go and plotkit.go draw the charts.
package report
