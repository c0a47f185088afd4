package dataset_test

// The package's own tests read Parquet datasets: link the format in, as
// every program that loads studies does. (An external test file may import
// parquetfmt, which imports dataset; the in-package tests see the same
// registration.)
import _ "github.com/promoral/promoral/pipeline/dataset/parquetfmt"
