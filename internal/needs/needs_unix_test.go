//go:build unix

package needs

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// helperEnv makes TestSkipHelper skip for a missing tool; only the test
// below sets it, in a child process.
const helperEnv = "PROMORAL_NEEDS_HELPER"

func TestSkipHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	Missing(t, "a probe tool", "install the probe")
}

// The notice is in the test output itself, which go test shows (with -v,
// -json, a single package or a failure): the test binary, run as go test
// runs it and with no terminal to write to, prints the summary on its
// standard error after the tests.
func TestSkipNoticeInTestOutput(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSkipHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1", RequireEnv+"=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal: /dev/tty cannot be opened
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the test binary failed: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	want := "SKIPPED TestSkipHelper: a probe tool is not installed, so this test did not run (install the probe)"
	if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "1 test(s) did not run") {
		t.Errorf("the test output does not carry the notice; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}
