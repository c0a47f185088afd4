package studytest

import (
	"fmt"
	"strings"
)

// A recorded study whose condition varies by row: each recorded reply
// carries the model that wrote it, the thinking level it was produced at
// and the prompt variant it answered. One task, one model entry, one
// matrix cell; the model name (report_as) and the factors come from the
// rows.
const RecordedTaskYAML = `name: recorded
type: label
dataset: {path: ../../data/replies.jsonl, id: id}
gold: gold
answer:
  positive: bad
  labels:
    - {value: bad, aliases: [wrong], gold: ["1"]}
    - {value: fine, aliases: [not wrong], gold: ["0"]}
extract:
  label: [{kind: prefix, prefix: Answer}]
factors:
  thinking: {from: item.thinking}
  variant: {expr: 'item.prompt == "b" ? "terse" : "plain"'}
report_as: {model: model}
`

// RescoreYAML is a strategy that only extracts the recorded reply.
const RescoreYAML = `name: rescore
stages:
  - {name: parse, kind: extract, text: item.reply}
outputs:
  label: stages.parse.label
`

// RecordedRun runs RescoreYAML over RecordedTaskYAML with no model calls.
const RecordedRun = `name: recorded-run
models:
  - {name: recorded, provider: none}
tasks: [recorded]
strategies: [rescore]
settings: {seed: 5}
metrics:
  - {kind: classification, bootstrap: 0}
`

// RecordedReplies generates n replies: thinking cycles off, low, high
// (every 50th row has none), the prompt variant alternates every three
// rows, and a row's answer is right for (i mod 5) below 2, 3 or 4 by
// thinking level (and below 1 for a row without one); the model is m1 or
// m2, alternating every six rows. It returns the data and, per
// "model/thinking/variant" ("" for no thinking), the cases and right
// answers.
func RecordedReplies(n int) (string, map[string][2]int) {
	levels := []string{"off", "low", "high"}
	var b strings.Builder
	want := map[string][2]int{}
	for i := 0; i < n; i++ {
		gold, right, wrong := "1", "wrong", "not wrong"
		if i%2 == 1 {
			gold, right, wrong = "0", "not wrong", "wrong"
		}
		prompt, variant := "a", "plain"
		if (i/3)%2 == 1 {
			prompt, variant = "b", "terse"
		}
		level, think, ok := levels[i%3], fmt.Sprintf(`"thinking":%q,`, levels[i%3]), i%3+2
		if i%50 == 0 {
			level, think, ok = "", "", 1
		}
		answer := wrong
		if i%5 < ok {
			answer = right
		}
		model := fmt.Sprint("m", (i/6)%2+1)
		k := model + "/" + level + "/" + variant
		w := want[k]
		w[0]++
		if answer == right {
			w[1]++
		}
		want[k] = w
		fmt.Fprintf(&b, `{"id":"r%d","model":%q,"gold":%q,%s"prompt":%q,"reply":"Reasoning %s.\nAnswer: %s"}`+"\n", i, model, gold, think, prompt, strings.Repeat("x", i%40), answer)
	}
	return b.String(), want
}

// OneShotDerived is one_shot with a param and a factor derived from it.
var OneShotDerived = strings.Replace(OneShotYAML, "name: one_shot\n", `name: one_shot
params: {conf: false}
factors:
  level: 0
  instruction: {expr: 'params.conf ? "on" : "off"'}
`, 1)

// DerivedModels are two scripted models whose thinking factor is derived
// from their params.
const DerivedModels = `
  - name: bot
    provider: scripted
    factors: {thinking: {expr: 'params.thinking?.enabled == true ? "on" : "off"'}}
    script:
      replies:
        - text: "Confidence: 0.8\nAnswer: {{if find \"(stole|lied|hit)\" .last}}wrong{{else}}not wrong{{end}}"
  - {name: bot-think, extends: bot, params: {thinking: {enabled: true, budget: 1024}}}
`
