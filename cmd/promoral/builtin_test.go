package main

import (
	"strings"
	"testing"
)

// A misspelt built-in study is caught before the loader says the file is
// missing.
func TestBuiltinNameTypo(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runIn(t, dir, "validate", "quickstrat")
	if code != 1 || !strings.Contains(stderr, `did you mean "quickstart"?`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	out, stderr, code := runIn(t, dir, "validate", "quickstart")
	if code != 0 || !strings.Contains(out, "ok: 2 models, 3 strategies, 2 tasks, 3 cells, 29250 cases") {
		t.Errorf("exit %d: %s%s", code, out, stderr)
	}
}
