// Runs SQL statements with DuckDB (the engine the README's queries are
// written for) and prints each one's rows as a JSON line.
// Usage: node .ci/duckdb-query.mjs 'SELECT ...' ...   (relative paths in the
// queries are read from the working directory)
import { DuckDBInstance } from '@duckdb/node-api';
const inst = await DuckDBInstance.create(':memory:');
const c = await inst.connect();
for (const q of process.argv.slice(2)) {
  const r = await c.runAndReadAll(q);
  console.log(JSON.stringify(r.getRowObjectsJson()));
}
