package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// Rows put in any order come out in case order, the cases skipped passed
// over, whether they waited in memory or in the spill file, and every
// value comes back as the writers take it.
func TestCaseSpoolOrdersAndSpills(t *testing.T) {
	defer func(c, b int) { spoolCases, spoolBytes = c, b }(spoolCases, spoolBytes)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	conf := 0.25
	row := func(ord int) []any {
		return []any{fmt.Sprint("case ", ord), ord, int64(-ord), float64(ord) / 3, math.NaN(), ord%2 == 0, nil, at, &conf, (*float64)(nil),
			map[string]any{"k": []any{1.5, "x"}}}
	}
	// What a row read back from the spill file holds.
	spilled := func(ord int) []any {
		return []any{fmt.Sprint("case ", ord), int64(ord), int64(-ord), float64(ord) / 3, math.NaN(), ord%2 == 0, nil, at, 0.25, nil, `{"k":[1.5,"x"]}`}
	}
	for _, bound := range []int{1000, 3} {
		spoolCases = bound
		const n = 200
		skip := func(o int) bool { return o%7 == 3 }
		var got []int
		readBack := 0
		sp := newCaseSpool(t.TempDir(), n, skip, func(ord int, rows [][]any) error {
			got = append(got, ord)
			for i, r := range rows {
				o := ord + 1000*i
				if bound == 1000 {
					// Held in memory: the values as they were put.
					if r[0] != fmt.Sprint("case ", o) || r[1] != o {
						t.Errorf("case %d row %d: %v", ord, i, r[:2])
					}
					continue
				}
				if reflect.DeepEqual(r[1:], row(o)[1:]) || r[1] == o {
					continue // held in memory: the values as they were put
				}
				readBack++
				w := spilled(o)
				for j := range r {
					if f, ok := w[j].(float64); ok && math.IsNaN(f) {
						if g, ok := r[j].(float64); !ok || !math.IsNaN(g) {
							t.Errorf("case %d value %d: %v, want NaN", ord, j, r[j])
						}
						continue
					}
					if !reflect.DeepEqual(r[j], w[j]) {
						t.Errorf("case %d value %d: %#v, want %#v", ord, j, r[j], w[j])
					}
				}
			}
			return nil
		})
		rng := rand.New(rand.NewPCG(1, uint64(bound)))
		var ords []int
		for o := range n {
			if !skip(o) {
				ords = append(ords, o)
			}
		}
		rng.Shuffle(len(ords), func(i, j int) { ords[i], ords[j] = ords[j], ords[i] })
		for _, o := range ords {
			rows := [][]any{row(o)}
			if o%5 == 0 {
				rows = append(rows, row(o+1000))
			}
			if err := sp.put(o, rows); err != nil {
				t.Fatal(err)
			}
		}
		if err := sp.finish(); err != nil {
			t.Fatal(err)
		}
		if bound == 3 && (sp.spills == 0 || readBack < 100) {
			t.Errorf("a bound of 3 cases spilled %d times, %d rows read back", sp.spills, readBack)
		}
		if len(got) != len(ords) {
			t.Fatalf("bound %d: %d cases out of %d", bound, len(got), len(ords))
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("bound %d: case %d after %d", bound, got[i], got[i-1])
			}
		}
	}
}
