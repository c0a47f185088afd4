package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// costFlag is apply --max-cost: a number of USD (0 lets no paid call out),
// or none to run without a cap whatever settings.max_cost says. Unset, the
// run file's settings.max_cost applies.
type costFlag struct {
	set  bool
	none bool
	usd  float64
}

func (c *costFlag) String() string {
	switch {
	case !c.set:
		return ""
	case c.none:
		return "none"
	}
	return strconv.FormatFloat(c.usd, 'g', -1, 64)
}

func (c *costFlag) Type() string { return "USD|none" }

func (c *costFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "none") {
		*c = costFlag{set: true, none: true}
		return nil
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(s, "$"), 64)
	switch {
	case err != nil && !strings.Contains(err.Error(), "range"):
		return fmt.Errorf("%q is not a number of USD: give the most this apply may spend (e.g. 5 or 0.25), or none to run uncapped", s)
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%q is not a finite amount: give the most this apply may spend in USD (e.g. 5 or 0.25), or none to run uncapped", s)
	case v < 0:
		return fmt.Errorf("%s is negative: give the most this apply may spend in USD (0 sends no paid call), or none to run uncapped", s)
	}
	*c = costFlag{set: true, usd: v}
	return nil
}
