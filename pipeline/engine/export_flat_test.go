package engine

// FlatHold and FlatRewrites let the external tests make the flat columns'
// types be decided on fewer rows and count the files written again.
var (
	FlatHold     = &flatHold
	FlatRewrites = &flatRewrites
)

// SpoolBound sets how many cases' rows, and how many bytes of them, wait
// in memory for an earlier case before they are spilled; it returns a
// function that puts the bounds back.
func SpoolBound(cases, bytes int) func() {
	c, b := spoolCases, spoolBytes
	spoolCases, spoolBytes = cases, bytes
	return func() { spoolCases, spoolBytes = c, b }
}
