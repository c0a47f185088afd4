package spec

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/promoral/promoral/internal/wrap"
)

// DownloadError is a load that needed datasets from the hub and could not
// reach it: a network problem, not a problem of the config. Its message
// gives one short line per dataset and says once how to work without
// network.
type DownloadError struct {
	Failed []DownloadFailure
	Hint   string // how to bring the data to a machine without network
}

// DownloadFailure is one dataset the hub could not be reached for.
type DownloadFailure struct {
	Task, Ref, Endpoint string
	Cause               string // in a few words: host not found, timed out
	File                string // the run file and the task's line in it
	Line                int
	Field               string
}

func (e *DownloadError) add(f DownloadFailure, hint string) {
	e.Failed = append(e.Failed, f)
	e.Hint = hint
}

func (e *DownloadError) Error() string {
	var b strings.Builder
	endpoints, causes := map[string]bool{}, map[string]bool{}
	width := 0
	for _, f := range e.Failed {
		endpoints[f.Endpoint], causes[f.Cause] = true, true
		width = max(width, utf8.RuneCountInString(f.Task))
	}
	head := "network problem: cannot reach the dataset hub"
	if len(endpoints) == 1 {
		head += " at " + e.Failed[0].Endpoint
	}
	if len(causes) == 1 {
		head += " (" + e.Failed[0].Cause + ")"
	}
	head += ", so " + Plural(len(e.Failed), "dataset was", "datasets were") + " not downloaded:"
	// The caller's "promoral: " stands before the first line.
	b.WriteString(strings.Join(wrap.Words(head, 80-len("promoral: ")), "\n"))
	for _, f := range e.Failed {
		line := fmt.Sprintf("  %-*s  %s", width, f.Task, f.Ref)
		if len(causes) > 1 {
			line += ": " + f.Cause
		}
		b.WriteString("\n" + line)
	}
	if e.Hint != "" {
		b.WriteString("\n" + strings.Join(wrap.Clauses(e.Hint, 80), "\n"))
	}
	return b.String()
}
