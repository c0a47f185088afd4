package configs_test

import (
	"os"
	"path/filepath"
	"testing"
)

// No test reads the user's dataset cache or reaches the hub: a test that
// needs one starts a loopback fake (hubtest) and its own cache folder.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "promoral-data-")
	if err != nil {
		panic(err)
	}
	os.Setenv("PROMORAL_DATA_DIR", dir)
	os.Setenv("PROMORAL_LIBRARY_DIR", filepath.Join(dir, "library"))
	os.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
	os.Setenv("HF_TOKEN_PATH", filepath.Join(dir, "no-token"))
	os.Unsetenv("HF_TOKEN")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
