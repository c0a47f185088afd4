package pipeline

// FlatHold and FlatRewrites let the external tests make the flat columns'
// types be decided on fewer rows and count the files written again.
var (
	FlatHold     = &flatHold
	FlatRewrites = &flatRewrites
)
