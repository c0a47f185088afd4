package report

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/promoral/promoral"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// Options tune a report.
type Options struct {
	// Case is the case whose calls the transcript shows; empty picks the
	// first case with more than one call, else the first case.
	Case string
	// Now stamps the footer (default time.Now); tests fix it.
	Now func() time.Time
}

// Output says what was written.
type Output struct {
	HTML, Markdown string   // paths
	Figures        []string // PNG and SVG paths
	Sections       []string // section ids, in order
	Skipped        []string // figures left out, and why
}

// Generate writes the report of the run in dir.
func Generate(dir string, opt Options) (*Output, error) {
	r, err := loadRun(dir)
	if err != nil {
		return nil, err
	}
	ix := newIndex(r.metrics)
	tokens := r.tokenStats(ix)
	// The transcript first: an unknown --case fails before anything is written.
	ts, err := r.transcriptSection(opt.Case)
	if err != nil {
		return nil, err
	}

	d := &doc{}
	r.header(d)
	r.highlights(d, ix)
	add := func(s *section) {
		if s != nil {
			d.Sections = append(d.Sections, s)
		}
	}
	add(r.scoringSection())
	add(r.accuracySection(ix))
	add(r.referenceSection())
	add(r.safetySection(ix))
	add(r.judgesSection(ix))
	add(r.umssSection(ix))
	add(r.tokensSection(ix, tokens))
	add(r.repeatsSection(ix))

	figs, skipped := r.buildFigures(ix, tokens)
	figDir := filepath.Join(dir, "figures")
	if err := os.MkdirAll(figDir, 0o755); err != nil {
		return nil, err
	}
	// Figures of an earlier report that this one does not draw would be
	// stale: the folder is the report's own.
	if old, _ := filepath.Glob(filepath.Join(figDir, "*")); len(old) > 0 {
		for _, p := range old {
			if ext := filepath.Ext(p); ext == ".png" || ext == ".svg" {
				os.Remove(p)
			}
		}
	}
	if err := renderAll(figs, dir); err != nil {
		return nil, err
	}
	fs := &section{ID: "figures", Title: "Figures"}
	for _, f := range figs {
		fs.Blocks = append(fs.Blocks, f)
	}
	if len(skipped) > 0 {
		fs.Blocks = append(fs.Blocks, &heading{Text: "Not drawn for this run", ID: "figures-skipped"}, skipped)
	}
	if len(figs) == 0 {
		fs.Intro = "This run has none of the data the figures need."
	}
	d.Skipped = skipped
	d.Sections = append(d.Sections, fs)

	add(r.confidenceSection())
	add(r.comparisonsSection())
	add(ts)
	add(r.auditSection())
	add(r.otherTablesSection())

	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	footer := fmt.Sprintf("Written by promoral %s report on %s from %s.", promoral.Version, now().UTC().Format("2006-01-02 15:04 MST"), filepath.Clean(dir))

	out := &Output{HTML: filepath.Join(dir, "report.html"), Markdown: filepath.Join(dir, "report.md"), Skipped: skipped}
	for path, body := range map[string]string{out.HTML: renderHTML(d, footer), out.Markdown: renderMarkdown(d, footer)} {
		if err := parquetio.WriteFileAtomic(path, []byte(body)); err != nil {
			return nil, err
		}
		os.Chmod(path, 0o644) // a report is for reading and sharing
	}
	for _, f := range figs {
		out.Figures = append(out.Figures, filepath.Join(dir, f.PNGFile), filepath.Join(dir, f.SVGFile))
	}
	for _, s := range d.Sections {
		out.Sections = append(out.Sections, s.ID)
	}
	return out, nil
}

// renderAll draws the figures on a few goroutines.
func renderAll(figs []*figure, dir string) error {
	workers := runtime.GOMAXPROCS(0)
	if workers > 4 {
		workers = 4
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	next := make(chan *figure)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				if err := safeRender(f, dir); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range figs {
		next <- f
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("drawing figures: %s", strings.Join(errs, "; "))
	}
	return nil
}

// safeRender turns a panic in the plotting library into an error.
func safeRender(f *figure, dir string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("figure %s: %v", f.ID, p)
		}
	}()
	return f.render(dir)
}
