package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The exact power of the sign test is what simulated counts give: items
// rise, fall or tie at random, and McNemarExact decides.
func TestSignTestPowerMatchesSimulatedCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n        int
		up, down float64
		alpha    float64
	}{{200, 0.15, 0.08, 0.05}, {60, 0.3, 0.1, 0.01}, {500, 0.05, 0.05, 0.05}, {1000, 0.1, 0.07, 0.05 / 9}} {
		want := SignTestPower(c.n, c.up, c.down, c.alpha)
		const sims = 4000
		hit := 0
		for s := 0; s < sims; s++ {
			b, cc := 0, 0
			for i := 0; i < c.n; i++ {
				u := r.Float64()
				switch {
				case u < c.up:
					cc++
				case u < c.up+c.down:
					b++
				}
			}
			if McNemarExact(b, cc) < c.alpha {
				hit++
			}
		}
		got := float64(hit) / sims
		if math.Abs(got-want) > 0.025 {
			t.Errorf("n=%d up=%.2f down=%.2f alpha=%.4f: exact power %.4f, simulated %d/%d = %.4f", c.n, c.up, c.down, c.alpha, want, hit, sims, got)
		}
	}
	// No difference: the rejection rate is at most alpha.
	if p := SignTestPower(300, 0.1, 0.1, 0.05); p > 0.05 {
		t.Errorf("power under no difference %.4f > alpha", p)
	}
}

// With items all alike (σ = 0) one sample a side is two independent coins:
// up = (1−a)·b and down = a·(1−b).
func TestFlipsWithoutItemSpread(t *testing.T) {
	l := Latent{Spread: 0, Share: 1}
	up, down := l.Flips(0.7, 0.1, 1)
	if math.Abs(up-0.3*0.8) > 1e-9 || math.Abs(down-0.7*0.2) > 1e-9 {
		t.Errorf("up %.6f down %.6f, want 0.24 and 0.14", up, down)
	}
}

// Assumptions turn into a latent model that reproduces them: the phi of two
// samples of one strategy and of the two strategies.
func TestLatentOfReproducesTheAssumptions(t *testing.T) {
	for _, a := range []PowerAssumptions{{0.75, 0.5, 0.7}, {0.6, 0.3, 0.9}, {0.9, 0.2, 0.4}} {
		l := LatentOf(a)
		v := l.Spread * l.Spread
		cons := PhiOf(v/(1+v), a.Accuracy, a.Accuracy)
		corr := PhiOf(v*l.Share/(1+v), a.Accuracy, a.Accuracy)
		if math.Abs(cons-a.Consistency) > 1e-3 || math.Abs(corr-a.Correlation) > 1e-3 {
			t.Errorf("%+v: latent %+v gives consistency %.4f and correlation %.4f", a, l, cons, corr)
		}
		// one sample a side: P(discordant) from Flips matches the phi.
		up, down := l.Flips(a.Accuracy, 0, 1)
		p := a.Accuracy
		wantDisc := 2 * (p*(1-p) - a.Correlation*p*(1-p))
		if math.Abs(up+down-wantDisc) > 2e-3 {
			t.Errorf("%+v: discordant %.4f, want %.4f", a, up+down, wantDisc)
		}
	}
}

// More items detect less; the MDE at the items a delta needs is that delta.
func TestMDEAndItemsNeededAgree(t *testing.T) {
	l := LatentOf(PowerAssumptions{0.75, 0.5, 0.7})
	m200, m800 := l.MDE(0.75, 200, 1, 0.05, 0.8), l.MDE(0.75, 800, 1, 0.05, 0.8)
	if !(m800 < m200) || m200 > 0.2 || m800 < 0.01 {
		t.Fatalf("MDE at 200 items %.4f, at 800 %.4f", m200, m800)
	}
	n := l.ItemsNeeded(0.75, m800, 1, 0.05, 0.8, 100000)
	if n < 700 || n > 900 {
		t.Errorf("items to detect the MDE of 800 items: %d", n)
	}
	// Repeats help when items are alike, and cannot when they differ.
	alike := LatentOf(PowerAssumptions{0.75, 0.1, 0.1})
	fixed := LatentOf(PowerAssumptions{0.75, 0.3, 0.95})
	for _, c := range []struct {
		name string
		l    Latent
		help bool
	}{{"alike", alike, true}, {"fixed", fixed, false}} {
		n1 := c.l.ItemsNeeded(0.75, 0.03, 1, 0.05, 0.8, 1<<22)
		ninf := c.l.ItemsNeeded(0.75, 0.03, 0, 0.05, 0.8, 1<<22)
		if (ninf > 0 && 2*ninf < n1) != c.help {
			t.Errorf("%s items: %d items at 1 repeat, %d with unlimited repeats", c.name, n1, ninf)
		}
	}
}
