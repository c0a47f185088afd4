package yamlstrict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/secret"
)

func tagFloat(s string) *float64 {
	if s == "" {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(fmt.Sprintf("pipeline: bad bound tag %q", s))
	}
	return &f
}

// checkField holds a written field to what its tags promise: a required
// field is not left empty (`name: ~` is no name), a value is one of its
// enum, a number stays within its min and max.
func (d *Decoder) checkField(k, val *yaml.Node, fv reflect.Value, f FieldInfo, path string) {
	val = ResolveAlias(val)
	if val == nil {
		return
	}
	if f.Required && val.Kind == yaml.ScalarNode && (val.Tag == "!!null" || (val.Tag == "!!str" && strings.TrimSpace(val.Value) == "")) {
		d.Errf(k, path, "give it a value", "required field %q is empty", f.Name)
		return
	}
	if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
		return
	}
	d.checkEnum(val, fv, f, path)
	if nonFinite(fv) {
		d.Errf(val, path, "write a finite number (.nan and .inf are none)", "%s is not a finite number", val.Value)
		return
	}
	if f.Min == nil && f.Max == nil {
		return
	}
	for fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return
		}
		fv = fv.Elem()
	}
	var x float64
	switch fv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x = float64(fv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x = float64(fv.Uint())
	case reflect.Float32, reflect.Float64:
		x = fv.Float()
	default:
		return
	}
	lo, hi := f.Min, f.Max
	if (lo != nil && x < *lo) || (hi != nil && x > *hi) {
		d.Errf(val, path, boundHint(lo, hi), "%s is out of range", val.Value)
	}
}

func boundHint(lo, hi *float64) string {
	g := func(p *float64) string { return strconv.FormatFloat(*p, 'g', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return "use a value from " + g(lo) + " to " + g(hi)
	case lo != nil:
		return "use a value of at least " + g(lo) + ", or leave the field out for the default"
	}
	return "use a value of at most " + g(hi)
}

// refuseKey reports a scalar that looks like an API key, without repeating
// it (it may be a real one), and tells the decoder to leave it undecoded so
// no later message can echo it either.
func (d *Decoder) refuseKey(n *yaml.Node, path string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || !secret.LooksLikeKey(n.Value) {
		return false
	}
	d.Errf(n, path, "put the key in .env or the environment and name its variable in key_env",
		"this value looks like an API key, which does not belong in a config file (it is not shown here, and nothing was sent)")
	return true
}

// checkOneDocument rejects a file holding more than one YAML document: only
// the first would be read, and whatever follows a "---" would be silently
// ignored.
func checkOneDocument(file string, data []byte, ds *Diags) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first, second yaml.Node
	if dec.Decode(&first) != nil {
		return
	}
	err := dec.Decode(&second)
	if errors.Is(err, io.EOF) {
		return
	}
	line := second.Line
	if len(second.Content) > 0 {
		line = second.Content[0].Line
	}
	if err != nil {
		line = 0
	}
	ds.Addf(file, line, "", "keep one document per file: remove the \"---\" and merge what follows, or move it to its own file",
		"the file holds a second YAML document, which would be ignored")
}

// nonFinite reports a float field (or a pointer to one) holding NaN or an
// infinity: no bound check catches NaN, and neither is a usable setting.
func nonFinite(fv reflect.Value) bool {
	for fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return false
		}
		fv = fv.Elem()
	}
	if k := fv.Kind(); k != reflect.Float32 && k != reflect.Float64 {
		return false
	}
	x := fv.Float()
	return math.IsNaN(x) || math.IsInf(x, 0)
}
