// Package needs is what a test does when a tool from outside Go that it
// needs (DuckDB's node package, Chromium) is missing. CI sets
// PROMORAL_REQUIRE_TOOLS=1 and the test fails. Anywhere else it is skipped,
// and said so three ways: in the test's log (the skip reason), in a summary
// the package's TestMain prints to the test output when its tests are done
// (Report: go test shows it with -v, -json, a single package, or a
// failure), and, because `go test ./...` hides all output of a package that
// passes, on the user's terminal as well. The run is kept out of go test's
// result cache, so the notice shows every time until the tool is
// installed.
package needs

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RequireEnv, set to 1, turns a missing tool into a failure.
const RequireEnv = "PROMORAL_REQUIRE_TOOLS"

// skipped are the notices of the tests of this test binary that did not
// run, for Report.
var skipped struct {
	mu    sync.Mutex
	lines []string
}

// Missing fails or skips t because tool is not installed; install says how
// to get it.
func Missing(t testing.TB, tool, install string) {
	t.Helper()
	msg := fmt.Sprintf("%s: %s is not installed, so this test did not run (%s)", t.Name(), tool, install)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s; %s=1 requires it", msg, RequireEnv)
		return
	}
	skipped.mu.Lock()
	skipped.lines = append(skipped.lines, msg)
	skipped.mu.Unlock()
	tell(t.Name(), "promoral tests: SKIPPED "+msg+"\n")
	t.Skip(msg) // the reason is in the test log (go test -v, or -json)
}

// Summary is what Report prints: "" when every test ran.
func Summary() string {
	skipped.mu.Lock()
	defer skipped.mu.Unlock()
	if len(skipped.lines) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "promoral tests: %d test(s) did not run because a tool is missing (set %s=1 to make that a failure):\n", len(skipped.lines), RequireEnv)
	for _, l := range skipped.lines {
		b.WriteString("  SKIPPED " + l + "\n")
	}
	return b.String()
}

// Report writes the summary of the tests skipped for a missing tool to w.
// A package whose tests may be skipped calls it from TestMain after m.Run,
// with os.Stderr: the notice is then part of the package's test output.
func Report(w io.Writer) {
	if s := Summary(); s != "" {
		io.WriteString(w, s)
	}
}

// tell writes the notice to the controlling terminal, which go test does
// not capture (a plain `go test ./...` prints nothing of a package that
// passes), and to a fresh file in the module that the test reads: go test
// does not cache a run that read a file of the module changed in the last
// two seconds (files outside the module it does not check). The test's own
// output gets the skip reason and Report's summary.
func tell(name, msg string) {
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		tty.WriteString(msg)
		tty.Close()
	}
	root, err := moduleRoot()
	if err != nil {
		return
	}
	dir := filepath.Join(root, ".ci", "skipped")
	if os.MkdirAll(dir, 0o755) == nil {
		f := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(name)+".txt")
		if os.WriteFile(f, []byte(msg), 0o644) == nil {
			if r, err := os.Open(f); err == nil {
				r.Close()
			}
		}
	}
}

// Chromium is the browser binary: $PROMORAL_CHROMIUM, else Debian's chromium
// (which .ci/run installs) or another Chrome on the PATH.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("PROMORAL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "Chromium", "apt-get install chromium, or set PROMORAL_CHROMIUM to a Chrome binary")
	return ""
}

// DuckDB returns node and the repository's .ci folder, where DuckDB's node
// package is installed.
func DuckDB(t testing.TB) (node, ci string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ci = filepath.Join(root, ".ci")
	node, err = exec.LookPath("node")
	if err != nil {
		Missing(t, "node (for DuckDB's node package)", "apt-get install nodejs npm, then npm install --prefix .ci @duckdb/node-api")
		return "", ""
	}
	if _, err := os.Stat(filepath.Join(ci, "node_modules", "@duckdb", "node-api")); err != nil {
		Missing(t, "DuckDB's node package", "npm install --prefix .ci @duckdb/node-api, as .ci/run does")
		return "", ""
	}
	return node, ci
}

// moduleRoot is the folder holding go.mod, from the test's working
// directory (its package's folder) upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
