// Package manifest is a run folder's manifest.json as a format: the
// manifest and the apply summary it carries, the selection a partial apply
// ran, the metric blocks with their policies and what a block declares for
// the report (BlockDraw), and the format version. It imports only the
// standard library, so stage and metric kinds, which name these types in
// their contract, build without the Parquet readers of package runfolder.
package manifest
