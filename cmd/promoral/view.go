package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/user"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/view"
)

func newView() *cobra.Command {
	var port int
	var annotator, bundle string
	cmd := &cobra.Command{
		Use:   "view RUN_DIR [RUN_DIR_2]",
		Short: "Read a run's samples in the browser: filter, search, open a case, compare, audit the judge",
		Long: "Serves the run on 127.0.0.1 (nothing leaves the machine; the page needs no network):\n" +
			"every case in a table with filters and search, each case's stages, calls and extraction,\n" +
			"unparsed replies grouped by shape with the rule that nearly matched, side by side comparisons\n" +
			"with the paired numbers of `promoral diff`, and the safety judge's audit queue, whose labels\n" +
			"are appended to RUN_DIR/labels.jsonl. With a second run, Compare pairs the same cells of both.\n" +
			"A run applied again while the view is open (re-scored) is read again on the next request.\n\n" +
			"--bundle DIR writes the same page as a static site instead, to publish: every case, filters,\n" +
			"search, transcripts, side by side and compare, answered in the browser by the viewer compiled\n" +
			"to WebAssembly, with no promoral server behind it. Any static host serves DIR (a plain file\n" +
			"server, GitHub Pages, a Hugging Face static Space). It is read-only: no audit labels.",
		Example: "  promoral view out/quickstart\n  promoral view out/paper out/paper-v2 --port 8800\n  promoral view --bundle site out/paper out/paper-v2",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var runs []*view.Run
			for _, dir := range args {
				r, err := view.Open(dir)
				if err != nil {
					return err
				}
				defer r.Close()
				runs = append(runs, r)
			}
			if bundle != "" {
				return writeBundle(cmd, bundle, runs)
			}
			if annotator == "" {
				if u, err := user.Current(); err == nil {
					annotator = u.Username
				}
			}
			srv := view.NewServer(runs, annotator)
			defer srv.Close() // the runs it reloaded since
			ln, url, err := srv.Listen(port)
			if errors.Is(err, syscall.EADDRINUSE) && !cmd.Flags().Changed("port") {
				ln, url, err = srv.Listen(0) // the usual port is taken: any free one
			}
			if err != nil {
				return fmt.Errorf("cannot listen on 127.0.0.1:%d: %w (pass --port with a free port, or 0 for any)", port, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "promoral view: %s (%d cases) at %s\n", runs[0].Name, runs[0].Len(), url)
			fmt.Fprintln(cmd.ErrOrStderr(), "Ctrl-C stops it.")
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			done := make(chan error, 1)
			go func() { done <- hs.Serve(ln) }()
			select {
			case err := <-done:
				if !errors.Is(err, http.ErrServerClosed) {
					return err
				}
			case <-cmd.Context().Done():
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				hs.Shutdown(ctx)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&port, "port", 8765, "port on 127.0.0.1 (0: any free port; when 8765 is taken and --port is not given, a free one is used)")
	cmd.Flags().StringVar(&bundle, "bundle", "", "write the view as a static site in `DIR` (new, empty, or an earlier bundle) instead of serving it")
	cmd.Flags().StringVar(&annotator, "annotator", "", "name audit labels are saved under (default: your user name; the page can change it)")
	return cmd
}

// writeBundle writes the runs as a static site in dir.
func writeBundle(cmd *cobra.Command, dir string, runs []*view.Run) error {
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, "promoral view: compiling the viewer to WebAssembly")
	wasm, wasmExec, err := view.BuildViewerWasm()
	if err != nil {
		return err
	}
	info, err := view.WriteBundle(dir, runs, wasm, wasmExec, out)
	if err != nil {
		return err
	}
	say(out, "promoral view: wrote %s: %d files, %.1f MB (the viewer %.1f MB before gzip)", dir, info.Files, float64(info.Bytes)/1e6, float64(len(wasm))/1e6)
	say(out, "  Serve it with any static host, e.g.\n  python3 -m http.server -d %s", dir)
	return nil
}
