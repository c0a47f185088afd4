package dataset

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/vm"
)

// Values in Item.Fields are plain Go values as decoded from JSON: string,
// bool, nil, map[string]any, []any, and numbers as int when they are whole
// and fit, float64 otherwise. Ints matter: filters like `label_int == 1`
// and ids like "<model>:<strategy>:12" read naturally only with them.

// normalize replaces json.Number (from a UseNumber decoder) by int or float64,
// recursively.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, strconv.IntSize); err == nil {
				return int(i)
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			// Out of float range; keep the text rather than lose it.
			return s
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

// lookup resolves a column reference in a row. An exact key wins, so CSV
// headers containing dots still work; otherwise the path is split on dots and
// walks nested objects (by key) and lists (by 0-based index).
func lookup(rec map[string]any, path string) (any, bool) {
	if v, ok := rec[path]; ok {
		return v, true
	}
	if !strings.Contains(path, ".") {
		return nil, false
	}
	var cur any = rec
	for _, part := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// scalarString renders an id-like value. Whole floats print without a
// fraction so that 12.0 from a CSV-typed column and 12 from JSON agree.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int:
		return strconv.Itoa(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10), true
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// describe names a value's JSON kind for error messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if r := []rune(x); len(r) > 40 {
			x = string(r[:40]) + "…"
		}
		return strconv.Quote(x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}

// convert applies a Spec.Types entry. null passes through: a missing answer
// is not a type error. For int, float and bool an empty (or blank) string
// also becomes null, because that is how CSV writes a missing number.
func convert(v any, typ string) (any, error) {
	if v == nil {
		return nil, nil
	}
	if s, ok := v.(string); ok && typ != "string" && strings.TrimSpace(s) == "" {
		return nil, nil
	}
	bad := func() (any, error) { return nil, fmt.Errorf("cannot convert %s to %s", describe(v), typ) }
	switch typ {
	case "string":
		if s, ok := scalarString(v); ok {
			return s, nil
		}
	case "int":
		switch x := v.(type) {
		case int:
			return x, nil
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int(x), nil
			}
		case string:
			if i, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
				return i, nil
			}
		}
	case "float":
		switch x := v.(type) {
		case int:
			return float64(x), nil
		case float64:
			return x, nil
		case string:
			if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
				return f, nil
			}
		}
	case "bool":
		switch x := v.(type) {
		case bool:
			return x, nil
		case int:
			if x == 0 || x == 1 {
				return x == 1, nil
			}
		case string:
			if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
				return b, nil
			}
		}
	}
	return bad()
}

// letter is the option label at 0-based position i (A, B, …).
func letter(i int) string { return string(rune('A' + i)) }

// filterProgram is a compiled Spec.Filter.
type filterProgram struct {
	code string
	prog *vm.Program
}

func (f *filterProgram) keep(rec map[string]any) (bool, error) {
	out, err := vm.Run(f.prog, rec)
	if err != nil {
		return false, fmt.Errorf("filter `%s` failed: %s; check the field names and types it uses", f.code, oneLine(err.Error()))
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("filter `%s` returned %s, not true or false; make it a comparison", f.code, describe(out))
	}
	return b, nil
}
