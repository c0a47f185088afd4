// Package chrome drives headless Chromium for the browser tests of the
// report and of promoral view: it finds the browser, starts it with the
// flags a sandboxed CI machine needs, and collects whatever a page does
// wrong (console errors, uncaught exceptions, requests it should not make).
package chrome

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/promoral/promoral/internal/needs"
)

// Start launches headless Chromium at width x height for the test (what
// names the page under test). With no browser installed the test is skipped
// loudly, or fails where CI requires the tools (internal/needs). The context ends with the test, or after limit as a guard
// against a hung browser.
func Start(t testing.TB, what string, width, height int, limit time.Duration) context.Context {
	t.Helper()
	browser := needs.Chromium(t)
	if browser == "" {
		return nil // skipped
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, limit)
	t.Cleanup(func() { cancel(); cancelCtx(); cancelAlloc() })
	return ctx
}

// Problems collects what a page did wrong.
type Problems struct {
	mu   sync.Mutex
	list []string
}

func (p *Problems) add(format string, args ...any) {
	p.mu.Lock()
	p.list = append(p.list, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

// List is what was collected so far.
func (p *Problems) List() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.list...)
}

// Watch records, from now on, console errors and failed assertions,
// uncaught exceptions, browser log errors, and every request whose URL
// allowed rejects.
func Watch(ctx context.Context, allowed func(url string) bool) (*Problems, error) {
	p := &Problems{}
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value))
				}
				p.add("console %s: %s", e.Type, strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			desc := ""
			if e.ExceptionDetails.Exception != nil {
				desc = e.ExceptionDetails.Exception.Description
			}
			p.add("uncaught exception: %s %s", e.ExceptionDetails.Text, desc)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				p.add("browser log error: %s (%s)", e.Entry.Text, e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; !allowed(u) {
				p.add("request it should not make: %.100s", u)
			}
		}
	})
	return p, err
}
