package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/simulated"
)

// simulatedModel compiles a simulated model's spec (and reads its pilot)
// into m's provider; false after an error it reported.
func (l *loader) simulatedModel(m *Model, spec *ModelSpec, path string) bool {
	var pilot map[string]map[string]float64
	s := spec.Simulate
	if s == nil {
		s = &simulated.Spec{}
	}
	if s.Pilot != "" {
		dir := s.Pilot
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(spec.File), dir)
		}
		name := s.PilotModel
		if name == "" {
			name = spec.Name
		}
		p, err := simulated.ReadPilot(dir, name, scanParquet)
		if err != nil {
			l.ds.Addf(spec.File, spec.Line, path+".simulate.pilot", "the path is relative to the file that declares the model", "%v", err)
			return false
		}
		pilot = p
	}
	sm, err := simulated.New(s, pilot)
	if err != nil {
		l.ds.Addf(spec.File, spec.Line, path+".simulate", "", "%v", err)
		return false
	}
	m.Provider = simulated.NewProvider(sm, s.Version)
	// The settings (and the pilot's items) are the model: changed ones
	// must not be served replies journaled from the old.
	h := sha256.Sum256([]byte(JSONString(s) + JSONString(pilot)))
	m.Identity += "|" + hex.EncodeToString(h[:8])
	return true
}

// scanParquet reads a pilot's results.parquet through the Parquet format
// the program links in (pipeline/dataset/parquetfmt).
func scanParquet(path string, cols []string, fn func(map[string]any)) error {
	return dataset.ScanFile(path, "parquet", cols, fn)
}
