// Package deptest checks what a package builds with: the packages
// `go list -deps` names for it, directly or not. The tests that keep a
// layer light (the kinds' contract, the run folder's readers, the
// transports below the engine) state their rule with it.
package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

// Module is the module's import path, with its slash.
const Module = "github.com/promoral/promoral/"

// SDKs are the provider SDKs' import path prefixes.
var SDKs = []string{"github.com/openai/", "github.com/anthropics/", "google.golang.org/genai"}

// Arrow is Apache Arrow's import path prefix.
const Arrow = "github.com/apache/arrow-go/"

// Forbid fails t once for every package pkg builds with that why names:
// why returns what is wrong with importing dep, or "" when pkg may. pkg is
// a path as go list takes it, relative to the test's folder or a full
// import path. It skips under -short (go list takes a while).
func Forbid(t testing.TB, pkg string, why func(dep string) string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if w := why(dep); w != "" {
			t.Errorf("%s imports %s: %s", pkg, dep, w)
		}
	}
}

// HasPrefix reports whether dep starts with any of the prefixes.
func HasPrefix(dep string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(dep, p) {
			return true
		}
	}
	return false
}
