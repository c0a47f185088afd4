package view

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/promoral/promoral/internal/chrome"
	"github.com/promoral/promoral/pipeline/audit"
	"github.com/promoral/promoral/report"
)

// The view of a real run (shipped configs and data, see demoYAML) in
// headless Chromium, as a person uses it: filter the list, search, open a
// case with the keyboard, compare two strategies and open a pair, label a
// case of the audit queue and find the label in labels.jsonl, follow a
// link from the report. No console error, no uncaught exception, no
// request beyond the loopback server. Screenshots of every page are kept
// (in $PROMORAL_VIEW_SCREENSHOTS when set).
func TestViewInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	ctx := chrome.Start(t, "promoral view", 1440, 1000, 4*time.Minute)
	dir := copyRun(t, demoRun(t))
	if _, err := report.Generate(dir, report.Options{}); err != nil {
		t.Fatal(err)
	}
	base, srv := serve(t, dir)
	run := srv.runs[0]
	shots := os.Getenv("PROMORAL_VIEW_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	os.MkdirAll(shots, 0o755)
	problems, err := chrome.Watch(ctx, func(u string) bool { return strings.HasPrefix(u, base) || strings.HasPrefix(u, "data:") })
	if err != nil {
		t.Fatal(err)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	// waitFor polls a condition of the page; the deadline guards a hang.
	waitFor := func(what, js string) {
		t.Helper()
		for k := 0; k < 200; k++ {
			if v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err == nil && v {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + ' | ' + ((document.querySelector('.summary .big')||{}).textContent || '') + ' | ' + document.body.innerText.slice(0, 300)`))
		t.Fatalf("waiting for %s: %s stayed false; the page: %s", what, js, state)
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(shots, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(png) < 20000 {
			t.Errorf("%s: the screenshot is suspiciously small (%d bytes)", name, len(png))
		}
		t.Logf("screenshot %s", p)
	}
	total := func(q string) int {
		var p CasesPage
		getJSON(t, base+"/api/cases?"+q, &p)
		return p.Total
	}
	bigIs := func(n int) string {
		return fmt.Sprintf(`(document.querySelector('.summary .big')||{}).textContent === %q`, fmt.Sprintf("%d", n))
	}

	// The list: every case, then a filter from the side panel.
	do("open the list", chromedp.Navigate(base+"/"), chromedp.WaitVisible("table.cases tbody tr"))
	waitFor("all cases", bigIs(run.Len()))
	// Item ids are never cut at their end, where the number is: the cell
	// shows the whole id, or its end after an ellipsis.
	if bad := eval(`[...document.querySelectorAll('table.cases td.item')].filter(td => td.scrollWidth > td.clientWidth || !td.title.endsWith(td.textContent.replace(/^…/, ''))).map(td => td.title + ' shown as ' + td.textContent + ' ' + td.scrollWidth + '>' + td.clientWidth).slice(0, 3).join('; ')`); bad != "" {
		t.Errorf("item ids cut: %s", bad)
	}
	do("filter wrong", chromedp.Click(`.facet[data-facet="outcome"] .fv[data-value="wrong"]`))
	wrong := total("outcome=wrong")
	waitFor("the wrong cases", bigIs(wrong))
	if u := eval(`location.search`); u != "?outcome=wrong" {
		t.Errorf("the filter is not in the URL: %q", u)
	}
	do("filter a model", chromedp.Click(`.facet[data-facet="model"] .fv[data-value="gpt-4.1"]`))
	both := total("outcome=wrong&model=gpt-4.1")
	waitFor("wrong cases of gpt-4.1", bigIs(both))
	if both == 0 || both >= wrong {
		t.Fatalf("the demo should have some, not all, wrong cases for gpt-4.1: %d of %d", both, wrong)
	}
	shot("1-list-filtered")

	// Search, from the keyboard: "/" focuses the box.
	do("clear filters", chromedp.Navigate(base+"/"), chromedp.WaitVisible("table.cases tbody tr"))
	do("search", chromedp.KeyEvent("/"), chromedp.SendKeys("#q", "birthday decorations"+kb.Enter))
	found := total("q=" + url.QueryEscape("birthday decorations"))
	if found == 0 {
		t.Fatal("the demo has no case with birthday decorations")
	}
	waitFor("the search results", bigIs(found)+` && location.search.includes('birthday')`)
	if n := eval(`String(document.querySelectorAll('table.cases tbody tr').length)`); n != fmt.Sprint(found) {
		t.Errorf("%s rows for %d found", n, found)
	}
	shot("2-search")

	// Open the second result with j and Enter.
	do("open a case", chromedp.KeyEvent("j"), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible("ol.steps li.step"))
	id := eval(`document.querySelector('.casehead h1').textContent`)
	if !strings.Contains(strings.ToLower(id), "ethics") {
		t.Errorf("the case page shows %q", id)
	}
	if n := eval(`String(document.querySelectorAll('ol.steps li.step').length)`); n == "0" {
		t.Error("the case page shows no stage")
	}
	if !strings.Contains(eval(`document.querySelector('ol.steps').textContent`), "Final Answer") {
		t.Error("the case page shows no reply")
	}
	if m := eval(`Array.from(document.querySelectorAll('mark')).map(m => m.textContent.toLowerCase()).join(',')`); !strings.Contains(m, "birthday") {
		t.Errorf("the search words are not marked on the case page: %q", m)
	}
	shot("3-case")
	do("next case", chromedp.KeyEvent("j"))
	waitFor("the next case", fmt.Sprintf(`document.querySelector('.casehead h1') && document.querySelector('.casehead h1').textContent !== %q`, id))

	// A case of a looping strategy: every stage says its kind (compute and
	// branch too); the item's own label is told apart from the answer.
	var sc CasesPage
	getJSON(t, base+"/api/cases?strategy=self_correct&task=ethics&limit=1", &sc)
	if len(sc.Rows) == 0 {
		t.Fatal("no self_correct case in the demo")
	}
	do("open a self_correct case", chromedp.Navigate(fmt.Sprintf("%s/case/0/%d", base, sc.Rows[0].I)), chromedp.WaitVisible("ol.steps li.step"))
	kinds := eval(`[...document.querySelectorAll('ol.steps li.step')].map(li => li.querySelector('.name').textContent + ':' + li.querySelector('.kind').textContent.split(' ')[0]).join(' ')`)
	for _, want := range []string{"answer:prompt", "answer_parse:extract", "current:compute", "critique:prompt", "converged:branch"} {
		if !strings.Contains(" "+kinds+" ", " "+want+" ") {
			t.Errorf("the case page's stages read %q, want %s among them", kinds, want)
		}
	}
	if strings.Contains(kinds, ":stage") {
		t.Errorf("a stage is shown without its kind: %s", kinds)
	}
	chips := eval(`[...document.querySelectorAll('.kv .chip b')].map(b => b.textContent).join('|')`)
	if !strings.Contains(chips, "|answer|") || strings.Contains(chips, "|label|") {
		t.Errorf("the case's head chips read %q: the model's label should be called answer", chips)
	}
	fieldNames := eval(`[...document.querySelectorAll('.panel.item table.fields th')].map(th => th.textContent).join('|') + ' / ' + [...document.querySelectorAll('.panel.outputs table.fields th')].map(th => th.textContent).join('|')`)
	if !strings.Contains(fieldNames, "item.label|") || !strings.Contains(fieldNames, "outputs.label") || strings.Contains("|"+fieldNames, "|label|") {
		t.Errorf("item fields / outputs read %q: the item's label and the answer's must be told apart", fieldNames)
	}
	shot("3b-case-kinds")

	// Side by side of a one-turn and a three-turn strategy: every turn
	// lined up, the replies' differing words marked.
	do("compare turns", chromedp.Navigate(base+"/compare?by=strategy&a=zero_shot&b=self_correct&task=ethics"), chromedp.WaitVisible(".pairs .pair"))
	do("open a multi-turn pair", chromedp.Click(".pairs .pair"), chromedp.WaitVisible(".sidebyside .turn"))
	turns := eval(`[...document.querySelectorAll('.sidebyside .turn')].map(d => d.dataset.turn + (d.classList.contains('none') ? '-' : '+')).join(' ')`)
	if !strings.HasPrefix(turns, "1+ 1+ 2- 2+ 3- 3+") {
		t.Errorf("side by side turns (A then B, - for none): %q", turns)
	}
	shot("4b-compare-turns")

	// Compare two strategies of the recorded replies; open a flipped pair.
	do("compare", chromedp.Navigate(base+"/compare?by=strategy&a=zero_shot&b=first_principles&task=promoral_replies"),
		chromedp.WaitVisible("table.cells tbody tr"))
	if n := eval(`String(document.querySelectorAll('table.cells tbody tr').length)`); n != "2" {
		t.Errorf("%s cells, want one per model (2)", n)
	}
	if f := eval(`(document.querySelector('.pair .fliptag')||{}).textContent || ''`); f != "now wrong" && f != "now right" {
		t.Errorf("the first pair is not a flip: %q", f)
	}
	// The two counts say what they count: a flip of correctness, and a label
	// that changed while the correctness did not.
	if chips := eval(`[...document.querySelectorAll('.summary .chip b')].map(b => b.textContent).join('|')`); !strings.Contains(chips, "right ↔ wrong|other label, same correctness") || strings.Contains(chips, "flips") {
		t.Errorf("the compare counts read %q", chips)
	}
	do("open a pair", chromedp.Click(".pairs .pair"), chromedp.WaitVisible(".sidebyside pre"))
	// The flipped pair's replies differ: the words only A has are marked on
	// the left, those only B has on the right.
	if marks := eval(`document.querySelectorAll('.sidebyside .turn.a del.dx').length + '/' + document.querySelectorAll('.sidebyside ins.dx').length + '/' + document.querySelectorAll('.sidebyside .turn.a ins.dx').length`); strings.HasPrefix(marks, "0/") || strings.Contains(marks, "/0/") || !strings.HasSuffix(marks, "/0") {
		t.Errorf("marked words (A's deletions / insertions / insertions on A's side): %s", marks)
	}
	shot("4-compare")

	// The audit queue: label the first case with key 1.
	do("audit", chromedp.Navigate(base+"/audit"), chromedp.WaitVisible(".labelbox .choice"))
	caseID := eval(`document.querySelector('.auditview .casehead h1').textContent`)
	choice := eval(`document.querySelector('.labelbox .choice').dataset.label`)
	shot("5-audit")
	do("label", chromedp.KeyEvent("1"))
	waitFor("the label saved", `document.querySelector('.labelbox .saved') && document.querySelector('.labelbox .saved').textContent.startsWith('Saved')`)
	ls, err := audit.ReadLabels(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].CaseID != caseID || ls[0].Label != choice || ls[0].Annotator != "tester" {
		t.Errorf("labels.jsonl holds %+v; want %s labelled %s by tester", ls, caseID, choice)
	}
	data, _ := os.ReadFile(filepath.Join(dir, audit.LabelsFile))
	var line map[string]any
	if err := json.Unmarshal(data, &line); err != nil || line["case_id"] != caseID {
		t.Errorf("labels.jsonl: %s (%v)", data, err)
	}
	// The queue moves on to the next case.
	waitFor("the next case in the queue", fmt.Sprintf(`document.querySelector('.auditview .casehead h1').textContent !== %q`, caseID))

	// The report, served by the view, links its rows to the lists.
	do("report", chromedp.Navigate(base+"/report.html"), chromedp.WaitVisible("a.pv-link"))
	href := eval(`document.querySelector('#accuracy a.pv-link').getAttribute('href')`)
	do("follow a report link", chromedp.Click("#accuracy a.pv-link"), chromedp.WaitVisible("table.cases tbody tr"))
	q, _ := url.Parse(href)
	waitFor("the linked list", bigIs(total(q.RawQuery)))
	shot("6-from-report")

	// Apply again (re-scored with half the ETHICS items): the open page
	// reads the run again on its next request, without a restart.
	do("back to the list", chromedp.Navigate(base+"/"), chromedp.WaitVisible("table.cases tbody tr"))
	before := run.Len()
	cfg := strings.Replace(demoYAML, "dataset: {limit: 40}", "dataset: {limit: 20}", 1)
	if err := applyConfig(t.TempDir(), cfg, dir); err != nil {
		t.Fatal(err)
	}
	do("filter after the re-score", chromedp.Click(`.facet[data-facet="outcome"] .fv[data-value="wrong"]`))
	waitFor("the re-scored run", fmt.Sprintf(`document.getElementById('runname').textContent.startsWith('viewdemo · %d cases')`, before-40))
	waitFor("the re-scored list", bigIs(total("outcome=wrong")))

	for _, p := range problems.List() {
		t.Error(p)
	}
}
