package engine

import "github.com/promoral/promoral/pipeline/parquetio"

// col declares one column of an output file (calls, results, metrics).
func col(name string, t parquetio.ColType, dict bool) parquetio.Column {
	return parquetio.Column{Name: name, Type: t, Dict: dict}
}
