package main

import (
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// A shard takes 1/N of each stated rate limit unless told otherwise, and
// says so.
func TestRateShare(t *testing.T) {
	st := &spec.Study{Selection: &manifest.Selection{Shard: &manifest.Shard{K: 1, N: 4}}}
	var b strings.Builder
	if n, err := rateShare(&b, st, "split"); err != nil || n != 4 || !strings.Contains(b.String(), "shard 1/4 takes 1/4 of each rate limit") {
		t.Errorf("split: %d, %v, %q", n, err, b.String())
	}
	b.Reset()
	if n, err := rateShare(&b, st, "whole"); err != nil || n != 1 || !strings.Contains(b.String(), "whole of each rate limit") {
		t.Errorf("whole: %d, %v, %q", n, err, b.String())
	}
	b.Reset()
	if n, err := rateShare(&b, &spec.Study{}, "split"); err != nil || n != 1 || b.Len() != 0 {
		t.Errorf("no shard: %d, %v, %q", n, err, b.String())
	}
	if _, err := rateShare(&b, st, "half"); err == nil || !strings.Contains(err.Error(), "--shard-rate") {
		t.Errorf("a bad value: %v", err)
	}
}
