// Package yamlstrict decodes YAML into Go structs strictly and reports every
// problem as a diagnostic that names the file, line and dotted field path and
// says what to do: unknown fields (with a did-you-mean), wrong types, missing
// required fields, values off a field's enum (with the values and a
// did-you-mean), values out of bounds, alias bombs. It never stops at the
// first problem, so one validate shows them all.
//
// The same struct tags drive decoding, validation, the reference and the
// JSON Schema: `yaml:"name,omitempty"` (",inline" embeds), `doc:"..."`,
// `required:"true"`, `enum:"a,b"`, bounds `min:""`/`max:""` and
// `default:""`, which decoding applies to a field left out (ApplyDefaults),
// or `inherit:""`, naming the setting a field left out takes its value from
// later (Fields lists them). Types that accept more than one shape
// implement NodeDecoder and get the raw node.
//
// Conventions:
//
//   - Diags collects diagnostics; Diags.Err is nil when there are none and
//     otherwise an error listing them sorted by file and line.
//   - Field paths are dotted (strategies.cot.stages[2].template) and Decoder
//     can record the line of each one (Lines) for checks made after decoding.
//   - It knows no promoral types: specs, stage kinds and metric kinds build
//     on it.
package yamlstrict
