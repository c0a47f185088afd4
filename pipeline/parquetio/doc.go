// Package parquetio writes and reads the Parquet files a run produces
// (calls, results, metrics): a row-at-a-time writer that flushes row groups
// as it goes, so memory follows the rows in flight, and readers that scan
// rows as maps or hand out arrow record batches.
//
// It knows nothing of studies: callers declare their columns ([]Column) and
// append values in that order. The engine, scoring and review build their
// files on it.
//
// Conventions:
//
//   - Every column is nullable: a nil value is a null, never a made-up zero.
//     Append takes the Go values its doc lists, pointers to them (nil: null).
//   - Nothing is written in place. Create and WriteFileAtomic write a
//     temporary file beside the target (its name carries TmpMark, so tidying
//     a run folder can remove what a killed writer left) and rename it on
//     Commit: a reader sees the old file or the whole new one.
//   - Pages are Zstd at level 1 by default through a codec whose encoders are
//     kept rather than pooled (zstdcodec.go); it writes the same bytes as
//     arrow's own, which a test checks. Large logs may pass Snappy.
//   - Readers take the file's own schema: a column the file lacks is skipped,
//     not an error, so older run folders stay readable.
package parquetio
