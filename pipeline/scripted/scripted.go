// Package scripted is a deterministic offline provider: replies are declared
// in YAML (optionally as templates over the request), so every stage kind, the
// quickstart and the tests run with no network and no key.
package scripted

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// Script is the YAML of a scripted model.
type Script struct {
	Replies []Reply       `yaml:"replies,omitempty" doc:"Ordered reply rules; the first whose match fits the request answers."`
	File    string        `yaml:"file,omitempty" doc:"A YAML file holding a list of reply rules, appended after replies (relative to the declaring file)."`
	Latency time.Duration `yaml:"latency,omitempty" doc:"Pretend each call takes this long."`
	Version string        `yaml:"version,omitempty" doc:"Model version to report (default scripted-1)."`
}

// Reply is one reply rule.
type Reply struct {
	Match  string `yaml:"match,omitempty" doc:"RE2 regular expression searched in the text named by 'in'; empty matches every request."`
	In     string `yaml:"in,omitempty" enum:"last,system,all" doc:"What 'match' searches: last (the last user message, default), system, or all (every message)."`
	Text   string `yaml:"text,omitempty" doc:"The reply, a Go template over .last .system .all .n .sample .repeat .model (.sample: the choice within n; .repeat: the case's repeat, 0 to repeats-1); functions hash, pick, mod, find, contains, lower, upper, trim."`
	Finish string `yaml:"finish,omitempty" enum:"stop,length,blocked" doc:"Finish reason to report: stop (default), length or blocked."`
	Status int    `yaml:"status,omitempty" doc:"Fail with this HTTP status instead of replying (429 and 5xx are transient, others permanent); for testing error paths."`
}

type rule struct {
	re     *regexp.Regexp
	in     string
	tmpl   *template.Template
	finish string
	status int
}

// Provider answers from a compiled Script.
type Provider struct {
	rules   []rule
	latency time.Duration
	version string
	calls   atomic.Int64
}

var funcs = template.FuncMap{
	"hash": func(s string) int {
		h := fnv.New64a()
		h.Write([]byte(s))
		return int(h.Sum64() & 0x7fffffffffff)
	},
	"mod": func(a, b int) int {
		if b == 0 {
			return 0
		}
		return a % b
	},
	"pick": func(i int, xs ...string) string {
		if len(xs) == 0 {
			return ""
		}
		if i < 0 {
			i = -i
		}
		return xs[i%len(xs)]
	},
	"find": func(pattern, s string) (string, error) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return "", err
		}
		m := re.FindStringSubmatch(s)
		switch {
		case m == nil:
			return "", nil
		case len(m) > 1:
			return m[1], nil
		}
		return m[0], nil
	},
	"contains": strings.Contains,
	"lower":    strings.ToLower,
	"upper":    strings.ToUpper,
	"trim":     strings.TrimSpace,
	"add":      func(a, b int) int { return a + b },
}

// Compile checks a script and returns its provider. Errors name the rule.
func Compile(s *Script) (*Provider, error) {
	p := &Provider{latency: s.Latency, version: s.Version}
	if p.version == "" {
		p.version = "scripted-1"
	}
	if len(s.Replies) == 0 {
		return nil, fmt.Errorf("the script has no replies; add replies: [{text: ...}]")
	}
	for i, r := range s.Replies {
		var cr rule
		if r.Match != "" {
			re, err := regexp.Compile(r.Match)
			if err != nil {
				return nil, fmt.Errorf("replies[%d].match: %v", i, err)
			}
			cr.re = re
		}
		switch r.In {
		case "", "last", "system", "all":
			cr.in = r.In
		default:
			return nil, fmt.Errorf("replies[%d].in: %q is not last, system or all", i, r.In)
		}
		switch r.Finish {
		case "", llm.FinishStop, llm.FinishLength, llm.FinishBlocked:
			cr.finish = r.Finish
		default:
			return nil, fmt.Errorf("replies[%d].finish: %q is not stop, length or blocked", i, r.Finish)
		}
		if cr.finish == "" {
			cr.finish = llm.FinishStop
		}
		t, err := template.New(fmt.Sprintf("replies[%d].text", i)).Funcs(funcs).Option("missingkey=error").Parse(r.Text)
		if err != nil {
			return nil, err
		}
		cr.tmpl = t
		cr.status = r.Status
		p.rules = append(p.rules, cr)
	}
	return p, nil
}

// Calls is how many requests the provider has answered or failed.
func (p *Provider) Calls() int64 { return p.calls.Load() }

// Complete implements llm.Provider.
func (p *Provider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	p.calls.Add(1)
	if p.latency > 0 {
		t := time.NewTimer(p.latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	var last, system string
	var all strings.Builder
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			last = m.Content
		case llm.RoleSystem:
			system += m.Content
		}
		all.WriteString(m.Content)
		all.WriteByte('\n')
	}
	texts := map[string]string{"": last, "last": last, "system": system, "all": all.String()}
	for _, r := range p.rules {
		if r.re != nil && !r.re.MatchString(texts[r.in]) {
			continue
		}
		if r.status != 0 {
			kind := llm.Permanent
			if r.status == 429 || r.status >= 500 {
				kind = llm.Transient
			}
			return nil, &llm.Error{Kind: kind, Status: r.status, RateLimited: r.status == 429, Msg: "scripted failure"}
		}
		resp := &llm.Response{ModelVersion: p.version}
		promptChars := all.Len()
		for i := 0; i < req.Samples(); i++ {
			var b bytes.Buffer
			data := map[string]any{"last": last, "system": system, "all": all.String(), "n": req.Samples(), "sample": i, "repeat": req.Repeat, "model": req.Model}
			if err := r.tmpl.Execute(&b, data); err != nil {
				return nil, &llm.Error{Kind: llm.Permanent, Msg: "scripted reply template: " + err.Error()}
			}
			resp.Choices = append(resp.Choices, llm.Choice{Text: b.String(), FinishReason: r.finish})
			resp.Usage.CompletionTokens += estimateTokens(b.Len())
		}
		resp.Usage.PromptTokens = estimateTokens(promptChars)
		return resp, nil
	}
	return nil, &llm.Error{Kind: llm.Permanent, Msg: "no scripted reply matches the request; add a catch-all reply without match"}
}

// estimateTokens uses the common ~4 characters per token rule: the scripted
// provider has no tokenizer, and its counts only need to be plausible.
func estimateTokens(chars int) int {
	if chars == 0 {
		return 0
	}
	return (chars + 3) / 4
}
