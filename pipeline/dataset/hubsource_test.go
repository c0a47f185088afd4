package dataset

import (
	"errors"
	"testing"
)

// Without pipeline/hub (this package's tests do not import it) there is no
// hub source, and opening one says so.
func TestOpenHubWithoutHub(t *testing.T) {
	src, err := OpenHub(HubOptions{RunFile: "run.yaml"})
	if src != nil || !errors.Is(err, ErrNoHub) {
		t.Fatalf("OpenHub: %v, %v", src, err)
	}
}
