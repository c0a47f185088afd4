package yamlstrict

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ApplyDefaults gives every field of the struct v points to that holds
// its type's zero value the value of its default:"" tag, and does the same
// in the structs it holds (by value, through pointers and in lists).
// Decoding applies it to every mapping it decodes, so code that builds a
// config struct itself calls it to get what decoding would give.
//
// A field whose zero value means something of its own (bootstrap: 0 turns
// intervals off) is a pointer, so that only a field left out is nil.
func ApplyDefaults(v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("yamlstrict: ApplyDefaults needs a non-nil pointer")
	}
	fill(rv.Elem())
}

// fill applies the defaults below v, whatever its kind.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			fill(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() != yamlNodeType {
			applyDefaults(v, Fields(v.Type()), nil)
		}
	}
}

// applyDefaults sets each of fields of struct v that holds its zero value
// to its default, and fills the fields not in decoded (decoding did the
// others already).
func applyDefaults(v reflect.Value, fields []FieldInfo, decoded map[string]bool) {
	for _, f := range fields {
		if f.Default == "" {
			if !decoded[f.Name] && !hasNil(v, f.Index) {
				fill(v.FieldByIndex(f.Index))
			}
			continue
		}
		fv := fieldByIndexAlloc(v, f.Index)
		if fv.IsZero() {
			setDefault(fv, f)
		}
	}
}

// hasNil says whether reaching field index from v passes a nil pointer
// (an inline struct held by a pointer and never written).
func hasNil(v reflect.Value, index []int) bool {
	for i, x := range index {
		if i > 0 {
			if v.Kind() == reflect.Pointer {
				if v.IsNil() {
					return true
				}
				v = v.Elem()
			}
		}
		v = v.Field(x)
	}
	return false
}

// setDefault parses f's default tag into fv (allocating a pointer).
func setDefault(fv reflect.Value, f FieldInfo) {
	target := fv
	if fv.Kind() == reflect.Pointer {
		target = reflect.New(fv.Type().Elem()).Elem()
	}
	if err := parseScalar(target, f.Default); err != nil {
		panic(fmt.Sprintf("yamlstrict: field %s: default:%q does not fit its type %s: %v", f.Name, f.Default, fv.Type(), err))
	}
	if fv.Kind() == reflect.Pointer {
		fv.Set(target.Addr())
	}
}

// parseScalar sets v from the text of a tag.
func parseScalar(v reflect.Value, s string) error {
	if v.Type() == DurationType {
		d, err := time.ParseDuration(s)
		v.SetInt(int64(d))
		return err
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		v.SetBool(b)
		return err
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, v.Type().Bits())
		v.SetInt(n)
		return err
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, v.Type().Bits())
		v.SetUint(n)
		return err
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(s, v.Type().Bits())
		v.SetFloat(x)
		return err
	default:
		return fmt.Errorf("a default is for a string, number or true/false")
	}
	return nil
}

// checkEnum reports a written value that is not one of the field's enum
// values, naming them and the nearest one. An empty string is no value:
// the field takes its default.
func (d *Decoder) checkEnum(n *yaml.Node, fv reflect.Value, f FieldInfo, path string) {
	if len(f.Enum) == 0 {
		return
	}
	s, ok := stringOf(fv)
	if !ok || s == "" || slices.Contains(f.Enum, s) {
		return
	}
	hint := "use " + orList(f.Enum)
	if dym := nearest(s, f.Enum); dym != "" {
		hint = fmt.Sprintf("did you mean %q? %s", dym, hint)
	}
	d.Errf(n, path, hint, "unknown %s %q", f.Name, s)
}

// stringOf is the string a field (or a pointer to one) holds.
func stringOf(v reflect.Value) (string, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.String {
		return "", false
	}
	return v.String(), true
}

// orList writes values as "a, b or c".
func orList(values []string) string {
	if len(values) == 1 {
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
