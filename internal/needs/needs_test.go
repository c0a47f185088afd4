package needs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeT records what Missing asks of a test instead of stopping it.
type fakeT struct {
	testing.TB
	failed, skipped string
}

func (f *fakeT) Helper()      {}
func (f *fakeT) Name() string { return "TestNeedsProbe" }
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}
func (f *fakeT) Skip(args ...any) { f.skipped = fmt.Sprint(args...) }

// The package reports its own skips as the packages that use it do.
func TestMain(m *testing.M) {
	code := m.Run()
	Report(os.Stderr)
	os.Exit(code)
}

// keepSkips saves the list of skipped tests and restores it when t ends, so
// the probes of these tests do not show in the package's own summary.
func keepSkips(t *testing.T) {
	skipped.mu.Lock()
	saved := skipped.lines
	skipped.lines = nil
	skipped.mu.Unlock()
	t.Cleanup(func() {
		skipped.mu.Lock()
		skipped.lines = saved
		skipped.mu.Unlock()
	})
}

func TestMissingFailsInCI(t *testing.T) {
	keepSkips(t)
	t.Setenv(RequireEnv, "1")
	f := &fakeT{}
	Missing(f, "Chromium", "apt-get install chromium")
	if f.skipped != "" || !strings.Contains(f.failed, "Chromium is not installed") || !strings.Contains(f.failed, RequireEnv) {
		t.Errorf("failed %q, skipped %q", f.failed, f.skipped)
	}
}

// Elsewhere the test is skipped, saying how to install the tool, and a fresh
// file read by the test keeps go test from caching the run (and so from
// hiding the notice next time).
func TestMissingSkipsAndStaysOutOfTheCache(t *testing.T) {
	keepSkips(t)
	t.Setenv(RequireEnv, "")
	f := &fakeT{}
	Missing(f, "DuckDB's node package", "npm install --prefix .ci @duckdb/node-api")
	if f.failed != "" || !strings.Contains(f.skipped, "npm install --prefix .ci @duckdb/node-api") {
		t.Errorf("failed %q, skipped %q", f.failed, f.skipped)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(root, ".ci", "skipped", "TestNeedsProbe.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if age := time.Since(st.ModTime()); age > time.Minute {
		t.Errorf("the notice file is %v old; go test caches runs whose files are older than 2 s", age)
	}
}

// A skipped test is listed in the summary Report writes, with the tool and
// how to install it; a failure in CI is not a skip and is not listed.
func TestReportListsSkippedTests(t *testing.T) {
	keepSkips(t)
	var none bytes.Buffer
	Report(&none)
	if none.Len() != 0 {
		t.Errorf("nothing skipped, yet the report says %q", none.String())
	}
	t.Setenv(RequireEnv, "1")
	Missing(&fakeT{}, "Chromium", "apt-get install chromium")
	if s := Summary(); s != "" {
		t.Errorf("a test failed for a missing tool is reported as skipped: %q", s)
	}
	t.Setenv(RequireEnv, "")
	Missing(&fakeT{}, "Chromium", "apt-get install chromium")
	var b bytes.Buffer
	Report(&b)
	for _, want := range []string{"1 test(s) did not run", "SKIPPED TestNeedsProbe: Chromium is not installed", "apt-get install chromium", RequireEnv + "=1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report %q does not say %q", b.String(), want)
		}
	}
}
