package engine

import (
	"errors"
	"text/template"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
)

// ErrorClass names what kind of failure err is, for results.parquet's
// error_class and the summary: llm's classes for provider failures, the
// constants above for the rest.
func ErrorClass(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, ErrOfflineMiss) {
		return spec.ClassOfflineMiss
	}
	var le *llm.Error
	if errors.As(err, &le) {
		return le.ClassName()
	}
	var pe *panicError
	if errors.As(err, &pe) {
		return spec.ClassInternal
	}
	var ce *spec.ClassError
	if errors.As(err, &ce) {
		return ce.Class
	}
	if errors.Is(err, errMaxSteps) {
		return spec.ClassMaxSteps
	}
	var te template.ExecError
	if errors.As(err, &te) {
		return spec.ClassTemplate
	}
	return spec.ClassStage
}

// errInterrupted ends a case that needs a new call after the run was
// interrupted: the case is not finished, not failed.
var errInterrupted = errors.New("interrupted")

var errMaxSteps = errors.New("too many stages")

type panicError struct{ msg string }

func (p *panicError) Error() string { return p.msg }
