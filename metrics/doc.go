// Package metrics holds promoral's metric kinds, one file each (common.go
// holds what several share: cells, subsets, intervals over cells). Every
// kind registers itself with package spec from init and describes its own
// fields through its config struct's tags, which drive strict decoding,
// validation and the JSON Schema.
//
// A kind computes over a spec.ResultSet and returns metrics.parquet rows
// and CSV tables; it does no I/O (the people's labels come through the
// result set) and imports nothing of the engine or of scoring, which runs
// it (TestKindsBuildWithoutEngine). Scoring gives each row its block and
// policies, reduces repeated samples first, and writes the files.
package metrics
