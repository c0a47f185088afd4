package dataset

import (
	"bytes"
	"testing"
)

// loadBytes runs the whole pipeline on in-memory data (no temp files, so
// fuzzing is fast).
func loadBytes(spec *Spec, format string, data []byte) ([]Item, error) {
	l, err := newLoader(spec, "fuzz."+format)
	if err != nil {
		return nil, err
	}
	if _, err := l.src.readStream(bytes.NewReader(data), format, l.add); err != nil {
		return nil, err
	}
	var items []Item
	err = l.finish(func(i, n int, it Item) { items = append(items, it) })
	return items, err
}

// fuzzSpecs exercise every pipeline step; any input may make them fail,
// but never panic, and a success must yield unique non-empty ids.
var fuzzSpecs = []*Spec{
	{ID: "id", Fields: map[string]string{"s": "a.b", "o": "opts.1"}, Types: map[string]string{"n": "int"},
		Filter:  `n == nil || n > 0 || s == "x"`,
		Shuffle: &Shuffle{Seed: 1, List: "opts", Parallel: []string{"types"}, Into: []string{"p", "q"}, Gold: "g"}},
	{Sample: &Sample{N: 2, Seed: 9},
		Expand:  &Expand{Variants: []Variant{{Name: "u", Fields: map[string]string{"x": "a"}}, {Name: "v", Fields: map[string]string{"x": "b", "y": "a"}}}},
		Shuffle: &Shuffle{Options: []string{"x", "y"}, Into: []string{"A", "B"}, Gold: "g"}},
	{IDColumns: []string{"a", "b"}, Limit: 1, Types: map[string]string{"a": "string", "b": "float", "c": "bool"}},
	{Shuffle: &Shuffle{List: "opts", Gold: "g", GoldKind: "index"}},
	{},
}

func fuzzLoad(t *testing.T, format string, data []byte) {
	for _, spec := range fuzzSpecs {
		items, err := loadBytes(spec, format, data)
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, it := range items {
			if it.ID == "" || seen[it.ID] {
				t.Fatalf("empty or duplicate id %q", it.ID)
			}
			seen[it.ID] = true
		}
	}
}

func FuzzLoadJSONL(f *testing.F) {
	f.Add([]byte(`{"id": "a", "a": {"b": "x"}, "opts": ["1", "2"], "types": [1, 2], "g": "B", "n": 3}` + "\n"))
	f.Add([]byte(`{"id": 1, "a": 1, "b": 2, "g": "x", "opts": [], "types": {}}` + "\n{\"id\": 1}\n"))
	f.Add([]byte(`{"a": "x", "b": "y", "g": 0, "opts": [1,2,3], "c": "true"}` + "\n" + `{"a": "z", "b": "w", "g": null}`))
	f.Add([]byte("\xEF\xBB\xBF{}\n\n[]\n"))
	f.Add([]byte(`{"n": 1e400, "id": 1.5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzLoad(t, "jsonl", data)
		fuzzLoad(t, "json", data)
	})
}

func FuzzLoadCSV(f *testing.F) {
	f.Add([]byte("id,a,b,g,opts\n1,x,y,A,z\n2,\"q\"\"\",\"\n\",,\n"))
	f.Add([]byte("a,b,c\n1,2.5,true\n1,2.5,nope\n"))
	f.Add([]byte("a,a\n1,2\n"))
	f.Add([]byte("a\tb\n\"x\ty\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzLoad(t, "csv", data)
		fuzzLoad(t, "tsv", data)
	})
}
