package runfolder

import (
	"testing"

	"github.com/promoral/promoral/internal/deptest"
)

// The readers of a run folder build without the engine or a provider SDK:
// runfolder, view and report import neither, directly or not.
func TestReadersBuildWithoutEngine(t *testing.T) {
	m := deptest.Module
	for _, pkg := range []string{".", "../view", "../report"} {
		deptest.Forbid(t, pkg, func(dep string) string {
			switch {
			case dep == m+"pipeline/engine" || dep == m+"pipeline/providers" || dep == m+"pipeline/transport":
				return "a reader of run folders needs none of the engine"
			case deptest.HasPrefix(dep, deptest.SDKs...):
				return "a provider SDK"
			}
			return ""
		})
	}
}

// The contract stage and metric kinds build against names the manifest
// and the model calls, not how run folders are read or calls are sent:
// runfolder/manifest and pipeline/llm import neither Arrow nor net/http,
// and pipeline/spec reaches the manifest without runfolder's readers.
func TestContractsBuildWithoutArrowOrHTTP(t *testing.T) {
	for _, pkg := range []string{"./manifest", "../pipeline/llm", "../pipeline/spec"} {
		deptest.Forbid(t, pkg, func(dep string) string {
			switch {
			case dep == deptest.Module+"runfolder":
				return "it reads Parquet"
			case deptest.HasPrefix(dep, deptest.Arrow):
				return "Arrow"
			case dep == "net/http":
				return "a contract sends nothing"
			}
			return ""
		})
	}
}
