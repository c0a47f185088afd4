package yamlstrict_test

import (
	"strings"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/yamlstrict"
)

type inner struct {
	Mode string `yaml:"mode,omitempty" enum:"fast,slow" default:"slow"`
}

type conf struct {
	Name  string        `yaml:"name,omitempty" default:"x"`
	Reps  *int          `yaml:"reps,omitempty" min:"0" default:"1000"`
	Bins  int           `yaml:"bins,omitempty" min:"1" default:"10"`
	Tol   float64       `yaml:"tol,omitempty" default:"0.5"`
	Wait  time.Duration `yaml:"wait,omitempty" default:"30s"`
	From  string        `yaml:"from,omitempty" enum:"a,b" inherit:"settings.from"`
	In    inner         `yaml:"in,omitempty"`
	List  []inner       `yaml:"list,omitempty"`
	Inner *inner        `yaml:"inner,omitempty"`
}

func decode(t *testing.T, src string, v any, overlay bool) yamlstrict.Diags {
	t.Helper()
	var ds yamlstrict.Diags
	n := yamlstrict.ParseYAML("c.yaml", []byte(src), &ds)
	d := yamlstrict.NewDecoder("c.yaml", &ds)
	d.Overlay = overlay
	d.Decode(n, v, "")
	return ds
}

// A field left out or null holds its default; one written keeps what is
// written (bootstrap 0 is a value, the pointer tells it from none); a field
// that inherits stays empty; structs held by value or in a list get theirs.
func TestDecodingAppliesDefaults(t *testing.T) {
	var c conf
	if ds := decode(t, "reps: 0\nname: ~\nlist: [{}, {mode: fast}]\ninner: {}\n", &c, false); len(ds) > 0 {
		t.Fatal(ds)
	}
	if c.Name != "x" || c.Reps == nil || *c.Reps != 0 || c.Bins != 10 || c.Tol != 0.5 || c.Wait != 30*time.Second || c.From != "" {
		t.Errorf("decoded %+v", c)
	}
	if c.In.Mode != "slow" || c.List[0].Mode != "slow" || c.List[1].Mode != "fast" || c.Inner == nil || c.Inner.Mode != "slow" {
		t.Errorf("nested defaults: %+v %+v %+v", c.In, c.List, c.Inner)
	}
	// An overlay changes only what it writes.
	if ds := decode(t, "bins: 3\n", &c, true); len(ds) > 0 || c.Bins != 3 || *c.Reps != 0 || c.Name != "x" {
		t.Errorf("after the overlay %+v %v", c, ds)
	}
	var built conf
	built.Bins = 4
	yamlstrict.ApplyDefaults(&built)
	if built.Bins != 4 || built.Reps == nil || *built.Reps != 1000 || built.In.Mode != "slow" || built.Inner != nil {
		t.Errorf("ApplyDefaults gave %+v", built)
	}
}

// A value off a field's enum names the values, and the nearest one.
func TestDecodingHoldsEnums(t *testing.T) {
	var c conf
	ds := decode(t, "from: c\nin: {mode: fsat}\nlist: [{mode: slow}, {mode: quick}]\n", &c, false)
	want := []string{
		`c.yaml:1: from: unknown from "c" (use a or b)`,
		`c.yaml:2: in.mode: unknown mode "fsat" (did you mean "fast"? use fast or slow)`,
		`c.yaml:3: list[1].mode: unknown mode "quick" (use fast or slow)`,
	}
	if got := ds.Error(); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// A default tag that does not fit its field is a mistake in the code.
func TestABadDefaultTagPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "bins") {
			t.Errorf("recovered %v, want a panic naming the field", r)
		}
	}()
	var c struct {
		Bins int `yaml:"bins" default:"ten"`
	}
	yamlstrict.ApplyDefaults(&c)
}
