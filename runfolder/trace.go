package runfolder

import "github.com/promoral/promoral/runfolder/casetrace"

// TraceStep is one stage run of a case (casetrace.Step).
type TraceStep = casetrace.Step
