package report

import (
	"math"
	"strings"
	"testing"
)

// The note for an ASR-against-RTA figure not drawn says what happened: no
// safety metric at all, or one whose every case errored, or one with
// cases the judge labelled none of.
func TestASRNoteSaysWhy(t *testing.T) {
	nan := math.NaN()
	row := func(name, status string, cases, errs, unparsed int) metric {
		return metric{Block: "safety", Task: "safety", Model: "bot", Strategy: "zero_shot", Subset: "all", Metric: name,
			Value: nan, Lo: nan, Hi: nan, NCases: cases, NErrors: errs, NUnparsed: unparsed, Status: status}
	}
	r := &run{models: []string{"bot"}, strategies: []string{"zero_shot"}, tasks: []string{"safety"}}
	for _, c := range []struct {
		name string
		rows []metric
		want string
	}{
		{"no safety block", nil, "the run has no safety metric"},
		{"every case errored", []metric{row("asr", "incomplete", 10, 10, 0), row("rta", "incomplete", 10, 10, 0)},
			"has no value in its one cell: all 10 of its cases errored; `promoral apply` on the same config retries them"},
		{"some errored, incomplete", []metric{row("asr", "incomplete", 10, 3, 0), row("rta", "incomplete", 10, 3, 0)},
			"3 of its 10 cases errored, and the block's errors: incomplete gives no figure"},
		{"nothing judged", []metric{row("asr", "empty", 10, 0, 10), row("rta", "empty", 10, 0, 10)},
			"the judge labelled none of its 10 cases"},
	} {
		got := r.asrRtaMissing(newIndex(c.rows))
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q in it", c.name, got, c.want)
		}
		if c.rows != nil && strings.Contains(got, "no safety metric") {
			t.Errorf("%s: %q says the run has no safety metric", c.name, got)
		}
	}
}
