package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The example job files call promoral with flags that exist, and each
// file's shard count agrees with its scheduler's count of tasks.
func TestDeployFilesUseRealFlags(t *testing.T) {
	verbs := map[string]*cobra.Command{"apply": newApply(), "merge": newMerge(), "report": newReport()}
	flag := regexp.MustCompile(`--([a-z][a-z-]*)`)
	call := regexp.MustCompile(`promoral (apply|merge|report)\b`)
	for _, c := range []struct {
		path  string
		count *regexp.Regexp // the scheduler's number of tasks
		n     *regexp.Regexp // N in --shard k/N
	}{
		{"../../deploy/slurm/promoral-array.sbatch", regexp.MustCompile(`#SBATCH --array=0-(\d+)`), regexp.MustCompile(`SHARDS=\$\{SHARDS:-(\d+)\}`)},
		{"../../deploy/k8s/promoral-indexed-job.yaml", regexp.MustCompile(`completions: (\d+)`), regexp.MustCompile(`--shard "\$JOB_COMPLETION_INDEX/(\d+)"`)},
		{"../../deploy/k8s/promoral-merge-job.yaml", nil, nil},
	} {
		data, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		// Join continued lines, drop comments: what is left is run.
		text := strings.ReplaceAll(string(data), "\\\n", " ")
		var verb string
		calls := 0
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if m := call.FindStringSubmatch(line); m != nil {
				verb = m[1]
				calls++
			}
			if verb == "" {
				continue
			}
			// A line may hold several calls (a && b): each flag belongs to
			// the call before it.
			idx := call.FindAllStringSubmatchIndex(line, -1)
			for _, f := range flag.FindAllStringSubmatchIndex(line, -1) {
				v := verb
				for _, ix := range idx {
					if ix[0] < f[0] {
						v = line[ix[2]:ix[3]]
					}
				}
				name := line[f[2]:f[3]]
				if verbs[v].Flags().Lookup(name) == nil {
					t.Errorf("%s: promoral %s has no flag --%s", c.path, v, name)
				}
			}
		}
		if calls == 0 {
			t.Errorf("%s calls no promoral verb", c.path)
		}
		if c.count != nil {
			a, b := c.count.FindStringSubmatch(text), c.n.FindStringSubmatch(text)
			if a == nil || b == nil {
				t.Fatalf("%s: no task count or no shard count found", c.path)
			}
			tasks, _ := strconv.Atoi(a[1])
			if strings.HasSuffix(c.path, ".sbatch") {
				tasks++ // --array=0-7 is 8 tasks
			}
			if strconv.Itoa(tasks) != b[1] {
				t.Errorf("%s: %d tasks but --shard k/%s", c.path, tasks, b[1])
			}
		}
	}
}
