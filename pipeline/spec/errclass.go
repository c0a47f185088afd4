package spec

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
