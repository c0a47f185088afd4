package main

import (
	"fmt"
	"io"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// rateShare is the part of each provider-stated rate limit this apply
// takes: 1/N for shard k/N unless --shard-rate whole, said on stderr.
func rateShare(w io.Writer, st *spec.Study, flag string) (int, error) {
	switch flag {
	case "split", "whole":
	default:
		return 0, fmt.Errorf("--shard-rate %q: give split (1/N of each rate limit per shard) or whole", flag)
	}
	sh := (*manifest.Shard)(nil)
	if st.Selection != nil {
		sh = st.Selection.Shard
	}
	if sh == nil || sh.N < 2 {
		return 1, nil
	}
	if flag == "whole" {
		say(w, "promoral: shard %s paces to the whole of each rate limit the providers state (--shard-rate whole)", sh)
		return 1, nil
	}
	say(w, "promoral: shard %s takes 1/%d of each rate limit the providers state, as the other shards spend the rest (--shard-rate whole takes it all)", sh, sh.N)
	return sh.N, nil
}

// sayRates adds to the summary, per model that met rate limits, what
// bound it and how many 429s it met, then once each the rate-limit
// headers that were not believed (an account's models share them).
func sayRates(w io.Writer, stats []*engine.ModelStats) {
	said := map[string]bool{}
	var warns []string
	for _, m := range stats {
		r := m.Rate()
		if s := r.String(); s != "" {
			say(w, "  %s: %s", m.Name, s)
		}
		for _, x := range r.Warnings {
			if !said[x] {
				said[x] = true
				warns = append(warns, x)
			}
		}
	}
	for _, x := range warns {
		say(w, "  warning: %s", x)
	}
}
