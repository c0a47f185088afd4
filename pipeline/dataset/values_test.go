package dataset

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestConvert(t *testing.T) {
	tests := []struct {
		in      any
		typ     string
		want    any
		wantErr bool
	}{
		{"12", "int", 12, false},
		{" 12 ", "int", 12, false},
		{3.0, "int", 3, false},
		{3.5, "int", nil, true},
		{"x", "int", nil, true},
		{"", "int", nil, false}, // empty CSV cell = null
		{"  ", "float", nil, false},
		{"", "string", "", false},
		{nil, "int", nil, false},
		{"0.25", "float", 0.25, false},
		{2, "float", 2.0, false},
		{"True", "bool", true, false},
		{"0", "bool", false, false},
		{1, "bool", true, false},
		{2, "bool", nil, true},
		{"yes", "bool", nil, true},
		{12, "string", "12", false},
		{1.5, "string", "1.5", false},
		{true, "string", "true", false},
		{[]any{1}, "string", nil, true},
		{map[string]any{}, "int", nil, true},
	}
	for _, tc := range tests {
		got, err := convert(tc.in, tc.typ)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("convert(%#v, %s) = %#v, %v; want %#v, error %t", tc.in, tc.typ, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestLookup(t *testing.T) {
	var rec map[string]any
	if err := json.Unmarshal([]byte(`{"a": {"b": {"c": 1}}, "l": [10, {"x": "y"}], "d.e": 5, "n": null}`), &rec); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want any
		ok   bool
	}{
		{"a.b.c", 1.0, true},
		{"l.0", 10.0, true},
		{"l.1.x", "y", true},
		{"d.e", 5.0, true},
		{"n", nil, true}, // present but null is not missing
		{"a.b.z", nil, false},
		{"l.2", nil, false},
		{"l.-1", nil, false},
		{"a.b.c.d", nil, false},
		{"zz", nil, false},
	}
	for _, tc := range tests {
		got, ok := lookup(rec, tc.path)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("lookup(%q) = %#v, %t; want %#v, %t", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNormalizeNumbers(t *testing.T) {
	rec, err := decodeObject([]byte(`{"i": 12, "neg": -3, "f": 1.5, "e": 1e2, "big": 123456789012345678901234567890, "nested": [{"k": 7}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"i": 12, "neg": -3, "f": 1.5, "e": 100.0, "big": 1.2345678901234568e29, "nested": []any{map[string]any{"k": 7}}}
	if !reflect.DeepEqual(rec, want) {
		t.Errorf("got %#v\nwant %#v", rec, want)
	}
}
