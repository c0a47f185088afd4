package main

import (
	"encoding/json"
	"fmt"

	"github.com/promoral/promoral/pipeline/spec/schema"
	"github.com/spf13/cobra"
)

func newSchema() *cobra.Command {
	return &cobra.Command{
		Use:       "schema [run|strategy|task|model]",
		Short:     "Print the JSON Schema of a config file kind, for editors (yaml-language-server)",
		Long:      "Print the JSON Schema of a config file kind (default run). The schema is generated from the stage and metric kinds' own field specs; schema/*.json in the repository holds the current ones.",
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: schema.Kinds,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := "run"
			if len(args) == 1 {
				kind = args[0]
			}
			s := schema.Of(kind)
			if s == nil {
				return fmt.Errorf("unknown schema kind %q (use run, strategy, task or model)", kind)
			}
			data, err := json.MarshalIndent(s, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(data))
			return nil
		},
	}
}
