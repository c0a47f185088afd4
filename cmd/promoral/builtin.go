package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/promoral/promoral"
)

// resolveConfig turns a built-in study's name (quickstart) into the path of
// its run file, written out of the binary into the user's cache folder.
// A path that exists always wins, so a file named like a built-in study is
// still read from disk.
func resolveConfig(arg string, log io.Writer) (string, error) {
	if _, err := os.Stat(arg); err == nil {
		return arg, nil
	}
	if _, ok := promoral.Studies[arg]; !ok {
		return arg, nil
	}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	dir, err := promoral.Extract(filepath.Join(root, "promoral"))
	if err != nil {
		return "", err
	}
	run := promoral.RunFile(dir, arg)
	fmt.Fprintf(log, "promoral: %s is built in; its files are in %s\n", arg, dir)
	return run, nil
}
