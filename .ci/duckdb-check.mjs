// Reads Parquet files with DuckDB (the engine users query promoral's outputs
// with) and prints, per file, its row count and columns as JSON lines.
// Usage: node .ci/duckdb-check.mjs FILE...
import { DuckDBInstance } from '@duckdb/node-api';
const inst = await DuckDBInstance.create(':memory:');
const c = await inst.connect();
for (const f of process.argv.slice(2)) {
  const q = f.replaceAll("'", "''");
  const n = await c.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${q}')`);
  const cols = await c.runAndReadAll(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('${q}'))`);
  console.log(JSON.stringify({ file: f, rows: Number(n.getRowObjectsJson()[0].n), columns: cols.getRowObjectsJson() }));
}
