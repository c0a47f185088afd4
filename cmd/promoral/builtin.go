package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/promoral/promoral"
	"github.com/promoral/promoral/pipeline/yamlstrict"
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
		names := make([]string, 0, len(promoral.Studies))
		for n := range promoral.Studies {
			names = append(names, n)
		}
		if d := yamlstrict.DidYouMean(arg, names); d != "" && !strings.ContainsAny(arg, `/\.`) {
			return "", fmt.Errorf("%s: no such file, nor a built-in study; %s", arg, d)
		}
		return arg, nil
	}
	dir, err := promoral.Library()
	if err != nil {
		return "", err
	}
	run := promoral.RunFile(dir, arg)
	fmt.Fprintf(log, "promoral: %s is built in; its files are in\n  %s\n", arg, dir)
	return run, nil
}
