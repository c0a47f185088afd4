package needs

import (
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

func TestMissingFailsInCI(t *testing.T) {
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
