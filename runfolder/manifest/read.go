package manifest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Read reads the manifest.json of the run folder dir (the outputs
// in force). A folder written by a later format than FormatVersion is an
// error naming both versions; one written before format_version existed
// reads as format 1.
func Read(dir string) (*Manifest, error) {
	path := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.Format == 0 {
		m.Format = 1
	}
	if m.Format > FormatVersion {
		return nil, fmt.Errorf("%s: format_version %d is newer than this promoral reads (format %d): read it with the promoral that wrote it (version %s) or a later one", path, m.Format, FormatVersion, m.Version)
	}
	return &m, nil
}
