//go:build js

package view

// A bundle's viewer (GOOS=js) is compiled without the engine, which does
// not build for WebAssembly: the case pages come written (JSON) and the
// answer policies come with the run (bundle.go).

// answerPolicyOf: a bundle holds the policy of each of its tasks; this
// answers only for a task it lacks, which counts no answer.
func answerPolicyOf(dir, task string) answerPolicy { return answerPolicy{} }

// checkFormat: a bundle was written by the promoral that built its viewer.
func checkFormat(dir string) error { return nil }
