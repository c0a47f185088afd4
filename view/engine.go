//go:build !js

package view

import "github.com/promoral/promoral/runfolder/manifest"

// What the view takes from the run-folder format to read a run. A
// bundle's viewer is compiled to WebAssembly without it (engine_js.go):
// it reads what the bundle prepared with these.

// answerPolicyOf reads a task's policy from the run folder's manifest.
func answerPolicyOf(dir, task string) answerPolicy {
	p := manifest.AnswerPolicyOf(dir, task)
	return policyFrom(p.Unparsed(), p.Errors(), p.Errors() == manifest.ErrorsIncomplete, p.Score)
}

// checkFormat refuses a run folder of a later format than this promoral
// reads.
func checkFormat(dir string) error {
	_, err := manifest.Read(dir)
	return err
}
