package pipeline

import (
	"errors"
	"text/template"

	"github.com/promoral/promoral/pipeline/llm"
)

// Error classes of a case that are not a provider's (those are llm.Class*).
const (
	// ClassOfflineMiss: --offline and the journal holds no reply for a
	// request the case needs.
	ClassOfflineMiss = "offline_miss"
	// ClassTemplate: a template failed on this item (a field it lacks).
	ClassTemplate = "template"
	// ClassStage: a stage failed on this case for another reason (an
	// expression that fails on this item's values, a conversation to
	// continue that did not happen).
	ClassStage = "stage"
	// ClassMaxSteps: the case ran more stages than settings.max_steps.
	ClassMaxSteps = "max_steps"
	// ClassInternal: promoral itself failed (a bug; the log has details).
	ClassInternal = "internal"
	// ClassRefused: the reply declines to answer, and the stage reading it
	// must not turn that into an answer (a judge that refuses to judge:
	// extract on_miss: error with a refusal pattern).
	ClassRefused = "refused"
	// ClassUnreadable: the reply holds no answer its rules read, and the
	// stage reading it says a miss is an error (extract on_miss: error).
	ClassUnreadable = "unreadable"
)

// ClassError is a failure that names its own class (ClassRefused,
// ClassUnreadable); stages wrap it so ErrorClass finds it.
type ClassError struct{ Class, Msg string }

func (e *ClassError) Error() string { return e.Msg }

// ErrorClass names what kind of failure err is, for results.parquet's
// error_class and the summary: llm's classes for provider failures, the
// constants above for the rest.
func ErrorClass(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, ErrOfflineMiss) {
		return ClassOfflineMiss
	}
	var le *llm.Error
	if errors.As(err, &le) {
		return le.ClassName()
	}
	var pe *panicError
	if errors.As(err, &pe) {
		return ClassInternal
	}
	var ce *ClassError
	if errors.As(err, &ce) {
		return ce.Class
	}
	if errors.Is(err, errMaxSteps) {
		return ClassMaxSteps
	}
	var te template.ExecError
	if errors.As(err, &te) {
		return ClassTemplate
	}
	return ClassStage
}

// errInterrupted ends a case that needs a new call after the run was
// interrupted: the case is not finished, not failed.
var errInterrupted = errors.New("interrupted")

var errMaxSteps = errors.New("too many stages")

type panicError struct{ msg string }

func (p *panicError) Error() string { return p.msg }
