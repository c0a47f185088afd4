package view

import "github.com/promoral/promoral/runfolder/casetrace"

// TraceStep is one stage of a case's trace, in the native viewer and the
// bundle's alike.
type TraceStep = casetrace.Step

func readTrace(s string) ([]TraceStep, error) { return casetrace.Read(s) }
