// Package stages holds promoral's stage kinds, one file each. Every kind
// registers itself with package spec (pipeline/spec) from init and
// describes its own fields through its config struct's tags, which drive
// strict decoding, validation and the JSON Schema. The engine knows no
// kind by name, and a kind imports nothing of the engine: a model call goes
// through the case in flight (spec.Exec). The metric kinds are in package
// metrics.
package stages
