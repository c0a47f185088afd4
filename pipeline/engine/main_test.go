package engine_test

import (
	"testing"

	"github.com/promoral/promoral/internal/studytest"
)

// No test reads the user's dataset cache or response cache, or reaches the
// hub: a test that needs one starts a loopback fake (hubtest) and its own
// cache folder.
func TestMain(m *testing.M) { studytest.Main(m) }
