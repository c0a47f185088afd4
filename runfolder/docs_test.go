package runfolder

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated column tables of docs/outputs.md")

const outputsDoc = "../docs/outputs.md"

// docs/outputs.md's column tables are what the declarations generate.
func TestOutputsDocUpToDate(t *testing.T) {
	data, err := os.ReadFile(outputsDoc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := UpdateDoc(string(data))
	if err != nil {
		t.Fatalf("%s: %v", outputsDoc, err)
	}
	if *update {
		if err := os.WriteFile(outputsDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != string(data) {
		t.Errorf("%s is stale: run go test ./runfolder -update", outputsDoc)
	}
}
