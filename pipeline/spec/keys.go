package spec

import (
	"encoding/json"
	"fmt"
)

// JSONString is v as JSON, or quoted text when it has none.
func JSONString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", fmt.Sprint(v))
	}
	return string(b)
}
