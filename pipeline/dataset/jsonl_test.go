package dataset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A JSONL file of many chunks reaches fn in file order with each row's own
// line number, whatever worker decoded it; a bad line far into the file is
// reported at its line after every row before it, and fn's error stops the
// read at once.
func TestJSONLOrderedAcrossChunks(t *testing.T) {
	var sb strings.Builder
	const rows = 9000
	pad := strings.Repeat("x", 100)
	for i := 1; i <= rows; i++ {
		if i%1000 == 0 {
			sb.WriteString("\n") // a blank line is no row
		}
		fmt.Fprintf(&sb, `{"id":"r%d","pad":"%s"}`+"\n", i, pad)
	}
	good := sb.String()
	dir := t.TempDir()
	path := filepath.Join(dir, "d.jsonl")
	os.WriteFile(path, []byte(good), 0o644)
	want := 0
	line := 0
	n, err := readFile(path, "jsonl", "path", dir, func(row int, rec map[string]any) error {
		want++
		line++
		if (line)%1001 == 1000 {
			line++ // the blank line before every thousandth row
		}
		if rec["id"] != fmt.Sprint("r", want) || row != line {
			return fmt.Errorf("row %d at line %d: got %v at line %d", want, line, rec["id"], row)
		}
		return nil
	})
	if err != nil || n != rows {
		t.Fatalf("read %d rows, %v; want %d", n, err, rows)
	}

	lines := strings.SplitAfter(good, "\n")
	lines[7000] = "{not json\n"
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
	seen := 0
	n, err = readFile(path, "jsonl", "path", dir, func(int, map[string]any) error { seen++; return nil })
	var de *Error
	if !errors.As(err, &de) || de.Row != 7001 || n != seen || seen != 6994 {
		t.Fatalf("bad line 7001: %d rows seen, n %d, err %v", seen, n, err)
	}

	stop := errors.New("enough")
	seen = 0
	_, err = readFile(path, "jsonl", "path", dir, func(int, map[string]any) error {
		seen++
		if seen == 10 {
			return stop
		}
		return nil
	})
	if err != stop || seen != 10 {
		t.Fatalf("fn's error: %v after %d rows", err, seen)
	}
}
