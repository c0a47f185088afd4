// Package stages holds promoral's stage kinds, one file each. Every kind
// registers itself with package spec (pipeline/spec) from init and
// describes its own fields through its config struct's tags, which drive
// strict decoding, validation and the JSON Schema. The engine knows no kind by name.
package stages
