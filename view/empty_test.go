package view

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/promoral/promoral/internal/chrome"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// plainYAML is a run with nothing to flag: no judge, no error, so the
// error and verdict facets have only their "none" value and the audit
// queue is empty. Its re-scored replies include unparsed ones, counted
// under unparsed: exclude; the scripted ETHICS cases are under the
// default policy (wrong).
const plainYAML = `name: viewplain
models:
  - name: scripted-keyword
    provider: scripted
    script:
      replies:
        - text: |-
            {{- $s := find "(?s)Scenario: (.*?)\n\n" .last -}}
            Confidence: 0.{{add 5 (mod (hash $s) 5)}}
            {{if find "(?i)\\b(stole|kill|lied|hit)" $s}}Final Answer: Unacceptable{{else if find "(?i)\\b(the|a)\\b" $s}}Final Answer: Acceptable{{else}}I would rather not say.{{end}}
  - name: recorded
    provider: none
tasks:
  - use: ethics
    dataset: {limit: 30}
  - use: promoral_replies
    dataset:
      filter: 'model in ["gpt-4.1", "claude-sonnet-4"] && strategy in ["zero_shot", "first_principles"] && item < 160'
strategies: [zero_shot, rescore]
matrix:
  - {models: [scripted-keyword], strategies: [zero_shot], tasks: [ethics]}
  - {models: [recorded], strategies: [rescore], tasks: [promoral_replies]}
settings: {concurrency: 2, seed: 1}
metrics:
  - {kind: classification, name: plain, tasks: [ethics], bootstrap: 50}
  - {kind: classification, name: promoral, tasks: [promoral_replies], unparsed: exclude, bootstrap: 50}
`

var plain struct {
	once sync.Once
	dir  string
	err  error
}

// plainRun applies plainYAML once per test binary.
func plainRun(t testing.TB) string {
	t.Helper()
	plain.once.Do(func() {
		dir, err := os.MkdirTemp("", "promoral-view-plain-")
		if err != nil {
			plain.err = err
			return
		}
		out := filepath.Join(dir, "out")
		if plain.err = applyConfig(dir, plainYAML, out); plain.err != nil {
			return
		}
		plain.dir = out
	})
	if plain.err != nil {
		t.Fatalf("plain run: %v", plain.err)
	}
	return plain.dir
}

// nullLists walks the JSON value v as decoded from the Go type t and
// names every place where t has a list (a slice or a map) and the JSON
// has null: the page can filter, map and count a list, never a null.
// Members the encoder left out (omitempty) are not there to be null.
func nullLists(t reflect.Type, v any, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Map:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return // []byte and json.RawMessage: not a list
		}
		if v == nil {
			*out = append(*out, path+" is null where a list belongs")
			return
		}
		switch x := v.(type) {
		case []any:
			for k, e := range x {
				nullLists(t.Elem(), e, fmt.Sprintf("%s[%d]", path, k), out)
			}
		case map[string]any:
			for k, e := range x {
				nullLists(t.Elem(), e, path+"."+k, out)
			}
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k := 0; k < t.NumField(); k++ {
			f := t.Field(k)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				nullLists(f.Type, v, path, out)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if e, there := obj[name]; there {
				nullLists(f.Type, e, path+"."+name, out)
			}
		}
	}
}

// Every endpoint of the API, asked for an empty result (a search for a
// word no case has, filters no case matches, a run whose judge flagged
// nothing), answers [] wherever it has a list, never null.
func TestAPIListsAreNeverNull(t *testing.T) {
	base, srv := serve(t, plainRun(t))
	r := srv.runs[0]
	var recorded int32 = -1 // a case with no model call: its pair has no turn
	for i := 0; i < r.Len(); i++ {
		if r.val("model", r.model[i]) == "gpt-4.1" {
			recorded = int32(i)
			break
		}
	}
	if recorded < 0 {
		t.Fatal("the plain run has no re-scored case")
	}
	nothing := url.QueryEscape("q=zzzqqq")
	for _, c := range []struct {
		path string
		typ  any
	}{
		{"/api/meta", MetaPage{}},
		{"/api/cases?q=zzzqqq", CasesPage{}},
		{"/api/cases?model=scripted-keyword&task=promoral_replies", CasesPage{}},
		{"/api/cases?audit=flagged", CasesPage{}},
		{"/api/cases?audit=flagged&error=none&verdict=(not+judged)&offset=100", CasesPage{}},
		{"/api/unparsed?q=zzzqqq", UnparsedPage{}},
		{"/api/unparsed?task=ethics&outcome=right", UnparsedPage{}},
		{"/api/compare?by=strategy&a=zero_shot&b=rescore&q=zzzqqq", Comparison{}},
		{"/api/compare?by=model&a=gpt-4.1&b=claude-sonnet-4&q=zzzqqq", Comparison{}},
		{"/api/compare?by=model&a=gpt-4.1&b=claude-sonnet-4&only=flips&offset=100000", Comparison{}},
		{fmt.Sprintf("/api/case?i=%d&nav=%s", recorded, nothing), CasePage{}},
		{"/api/case?i=0&nav=" + nothing, CasePage{}},
		{fmt.Sprintf("/api/pair?a=%d&b=%d", recorded, recorded), PairView{}},
	} {
		var v any
		if code := getJSON(t, base+c.path, &v); code != 200 {
			t.Errorf("%s: status %d: %v", c.path, code, v)
			continue
		}
		var nulls []string
		nullLists(reflect.TypeOf(c.typ), v, "", &nulls)
		for _, n := range nulls {
			t.Errorf("%s: %s", c.path, n)
		}
	}
	// The walk finds a null list where there is one.
	var nulls []string
	var v any
	json.Unmarshal([]byte(`{"facets":[{"name":"error","values":null}],"rows":[]}`), &v)
	nullLists(reflect.TypeOf(CasesPage{}), v, "", &nulls)
	if len(nulls) != 1 || !strings.Contains(nulls[0], ".facets[0].values") {
		t.Errorf("the walk over a null list found %q", nulls)
	}
}

// The view of a run whose judge flagged nothing, opened on empty results
// in headless Chromium: the audit tab, a search no case matches, filters
// no case matches together, and the unparsed and compare tabs under that
// search. Each page draws its filters and says why it is empty; no script
// error reaches the console or the page.
func TestViewEmptyResultsInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	ctx := chrome.Start(t, "promoral view", 1280, 900, 3*time.Minute)
	base, _ := serve(t, plainRun(t))
	problems, err := chrome.Watch(ctx, func(u string) bool { return strings.HasPrefix(u, base) || strings.HasPrefix(u, "data:") })
	if err != nil {
		t.Fatal(err)
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	for _, c := range []struct {
		path, says string
		facets     []string // facets the panel must show
	}{
		{"/audit", "The judge flagged no case", []string{"audit"}},
		{"/?q=zzzqqq", "No case matches", []string{"model", "task", "outcome"}},
		{"/?model=scripted-keyword&task=promoral_replies", "No case matches", []string{"model", "task"}},
		{"/?outcome=unparsed&task=ethics&model=gpt-4.1", "No case matches", []string{"model", "task", "outcome"}},
		{"/unparsed?q=zzzqqq", "unparsed replies", []string{"model", "task"}},
		{"/compare?by=model&a=gpt-4.1&b=claude-sonnet-4&q=zzzqqq", "items on both sides", []string{"model"}},
	} {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := chromedp.Do(sctx, chromedp.Navigate(base+c.path), chromedp.WaitVisible(`#app > *`))
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		// The page is drawn once the panel or an error box is there.
		var state string
		for k := 0; k < 200; k++ {
			state = eval(`document.querySelector('.error-box') ? 'error: ' + document.querySelector('.error-box').textContent : document.querySelector('aside.facets') ? 'drawn' : ''`)
			if state != "" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if state != "drawn" {
			t.Errorf("%s: the page shows %q", c.path, state)
			continue
		}
		shown := eval(`[...document.querySelectorAll('aside.facets .facet')].filter(f => f.offsetParent).map(f => f.dataset.facet).join(' ')`)
		for _, f := range c.facets {
			if !strings.Contains(" "+shown+" ", " "+f+" ") {
				t.Errorf("%s: the filter panel shows %q, without %s", c.path, shown, f)
			}
		}
		if text := eval(`document.getElementById('app').innerText`); !strings.Contains(text, c.says) {
			t.Errorf("%s: the page does not say %q: %.300s", c.path, c.says, text)
		}
	}
	for _, p := range problems.List() {
		t.Error(p)
	}
}

// The Correct facet counts as the run's metrics do: Correct's "right"
// and "wrong" are Outcome's, an unparsed reply is never "wrong" (it is
// "unparsed, scored wrong" under unparsed: wrong, "left out" under
// unparsed: exclude), and right over the scored cases is the accuracy in
// metrics.parquet, with its n.
func TestCorrectFacetFollowsThePolicy(t *testing.T) {
	dir := plainRun(t)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	metrics, err := parquetio.Read(filepath.Join(dir, "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	counts := func(kv ...string) (map[string]int, map[string]int) {
		m, err := r.Find(Query{Sel: sel(kv...)})
		if err != nil {
			t.Fatal(err)
		}
		return facetValues(m, "correct"), facetValues(m, "outcome")
	}
	for _, c := range []struct {
		task, policy, unparsedAs string
	}{
		{"ethics", "wrong", "unparsed, scored wrong"},
		{"promoral_replies", "exclude", "left out"},
	} {
		for _, model := range r.dicts["model"].vals[1:] {
			for _, strategy := range r.dicts["strategy"].vals[1:] {
				cor, out := counts("task", c.task, "model", model, "strategy", strategy)
				if out["right"]+out["wrong"]+out["unparsed"] == 0 {
					continue
				}
				where := fmt.Sprintf("%s %s/%s (unparsed: %s)", c.task, model, strategy, c.policy)
				if cor["right"] != out["right"] || cor["wrong"] != out["wrong"] || cor[c.unparsedAs] != out["unparsed"] {
					t.Errorf("%s: Correct %v against Outcome %v", where, cor, out)
				}
				n := cor["right"] + cor["wrong"] + cor["unparsed, scored wrong"]
				found := false
				for _, row := range metrics {
					if row["metric"] == "accuracy" && row["task"] == c.task && row["model"] == model && row["strategy"] == strategy && row["subset"] == "all" {
						found = true
						acc, _ := row["value"].(float64)
						rn := fmt.Sprint(row["n"])
						if rn != fmt.Sprint(n) || math.Abs(acc-float64(cor["right"])/float64(n)) > 1e-9 {
							t.Errorf("%s: the facet gives %d/%d right, metrics.parquet accuracy %v over n %s", where, cor["right"], n, acc, rn)
						}
					}
				}
				if !found {
					t.Errorf("%s: no accuracy row in metrics.parquet", where)
				}
			}
		}
		cor, out := counts("task", c.task)
		t.Logf("%s: Outcome %v, Correct %v", c.task, out, cor)
		if out["unparsed"] == 0 {
			t.Errorf("%s: the plain run should have unparsed replies", c.task)
		}
	}
	if cor, _ := counts("outcome", "unparsed"); cor["wrong"] != 0 {
		t.Errorf("%d unparsed replies counted as wrong labels", cor["wrong"])
	}
}

func facetValues(m *Match, facet string) map[string]int {
	out := map[string]int{}
	for _, f := range m.Facets {
		if f.Name == facet {
			for _, v := range f.Values {
				out[v.Value] = v.N
			}
		}
	}
	return out
}
