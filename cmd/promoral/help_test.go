package main

import (
	"strings"
	"testing"
)

// apply --help and plan --help name the shard flag's value: --shard k/N.
func TestShardHelpNamesItsValue(t *testing.T) {
	for _, verb := range []string{"apply", "plan"} {
		out, _, code := runCLI(t, verb, "--help")
		if code != 0 || !strings.Contains(out, "--shard k/N") || strings.Contains(out, "--shard promoral") {
			t.Errorf("%s --help (exit %d):\n%s", verb, code, out)
		}
	}
}
