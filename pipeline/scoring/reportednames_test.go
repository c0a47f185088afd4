package scoring_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// ReadResultSet takes a report_as task's model and strategy names from the
// rows it reads back rather than from the items; both must name every
// case's cell the same.
func TestReadResultSetReportedNamesFromRows(t *testing.T) {
	st, err := spec.LoadWith(filepath.Join("..", "..", "configs", "quickstart.yaml"), spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A share of the recorded replies across all their models and strategies.
	if err := st.Select(manifest.Selection{Tasks: []string{"promoral_replies"}, Shard: &manifest.Shard{K: 3, N: 60}}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	sc := &orderKeeper{Scorer: scoring.New()}
	if _, _, err := engine.NewEngine(st, engine.Options{OutDir: out, NoResults: true, Scorer: sc}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	gen := engine.CurrentGeneration(out)
	rs, err := scoring.ReadResultSet(st, filepath.Join(gen, "results.parquet"), sc.order)
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	pairs := map[[2]string]bool{}
	st.EachCase(func(c *spec.Case) bool {
		if k >= len(rs.Rows) {
			t.Fatalf("%d rows for more cases", len(rs.Rows))
		}
		m, s := c.ReportedNames()
		if got := rs.Rows[k].RowCell; got.Model != m || got.Strategy != s {
			t.Fatalf("case %s: row reports %s/%s, the item %s/%s", c.ID(), got.Model, got.Strategy, m, s)
		}
		pairs[[2]string{m, s}] = true
		k++
		return true
	})
	if k != len(rs.Rows) || len(pairs) < 30 {
		t.Fatalf("%d cases, %d rows, %d model/strategy pairs: the test needs many", k, len(rs.Rows), len(pairs))
	}
}

// orderKeeper scores as scoring.New does and keeps the case order the
// engine hands it with the results.
type orderKeeper struct {
	*scoring.Scorer
	order []int32
}

func (k *orderKeeper) Score(w engine.Written) ([]string, error) {
	k.order = w.Order
	return k.Scorer.Score(w)
}
