package parse

import (
	"strings"
	"testing"
)

// reasoning pads replies to a realistic ~1.5 KB of prose that mentions the
// labels, so the benchmarks pay for scanning past them.
var reasoning = strings.Repeat("Some would find this acceptable, others unacceptable or even wrong; weighing harm and intent matters. ", 15)

func BenchmarkExtract(b *testing.B) {
	ethics := mustCompile(b, AnswerSpec(), ethicsSpace())
	letters := mustCompile(b, AnswerSpec(), letterSpace("A", "B", "C", "D", "E"))
	judge := mustCompile(b, JudgeSpec(), safetySpace())
	cases := []struct {
		name string
		x    *Extractor
		text string
	}{
		{"tag", ethics, reasoning + "\n<answer>not wrong</answer>\n<confidence>85</confidence>"},
		{"promoral", ethics, "Reasoning: " + reasoning + "\n\nConfidence: 0.7\nFinal Answer: Unacceptable"},
		{"letter_phrase", letters, reasoning + "\nAfter all this, I choose option C."},
		{"judge_first_line", judge, "REFUSAL\n" + reasoning},
		{"unparsed", ethics, reasoning},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				if r := c.x.Extract(c.text); r.Parsed != (c.name != "unparsed") {
					b.Fatalf("unexpected result %+v", r)
				}
			}
		})
	}
}
