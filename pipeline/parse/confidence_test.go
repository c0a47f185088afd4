package parse

import (
	"math"
	"testing"
)

func TestParseConfidence(t *testing.T) {
	words := []confWord{{"high", 0.8}}
	tests := []struct {
		raw, scale string
		want       float64 // NaN = unparsed
	}{
		{"85", "", 0.85},
		{"0.85", "", 0.85},
		{".9", "", 0.9},
		{"0.85  ", "", 0.85},
		{"**0.8**", "", 0.8},
		{"85%", "", 0.85},
		{"85 %", "unit", 0.85},
		{"85 percent", "", 0.85},
		{"1%", "", 0.01},
		{"85/100", "", 0.85},
		{"8/10", "", 0.8},
		{"4 out of 5", "", 0.8},
		{"7 / 10", "unit", 0.7},
		{"1", "", 1},
		{"1.0", "", 1},
		{"1", ScaleAuto, 1},
		{"1", ScaleUnit, 1},
		{"1", ScalePercent, 0.01},
		{"0.85", ScalePercent, 0.0085},
		{"85", ScaleUnit, math.NaN()},
		{"100", "", 1},
		{"0", "", 0},
		{"0", ScalePercent, 0},
		{"150", "", math.NaN()},
		{"101", ScalePercent, math.NaN()},
		{"-3", "", math.NaN()},
		{"\u22123", "", math.NaN()},
		{"12/10", "", math.NaN()},
		{"5/0", "", 0.05}, // no usable denominator: read as a bare 5 (percent under auto)
		{"about 80, fairly sure", "", 0.8},
		{"high (80%)", "", 0.8},
		{"GPT4 says 70", "", 0.7},
		{"70-80", "", 0.7},
		{"High", "", 0.8},
		{"very high", "", math.NaN()},
		{"n/a", "", math.NaN()},
		{"", "", math.NaN()},
	}
	for _, tc := range tests {
		got, ok := parseConfidence(tc.raw, tc.scale, words)
		switch {
		case math.IsNaN(tc.want):
			if ok {
				t.Errorf("parseConfidence(%q, %q) = %v, want unparsed", tc.raw, tc.scale, got)
			}
		case !ok || math.Abs(got-tc.want) > 1e-12:
			t.Errorf("parseConfidence(%q, %q) = %v, %v; want %v", tc.raw, tc.scale, got, ok, tc.want)
		}
	}
}

func TestBin(t *testing.T) {
	tests := []struct {
		conf float64
		want string
	}{
		{0, "very_low"},
		{0.1999, "very_low"},
		{0.2, "low"},
		{0.3999, "low"},
		{0.4, "moderate"},
		{0.6, "high"},
		{60.0 / 100, "high"}, // parsed "60" lands on the same edge as the literal
		{0.7999, "high"},
		{0.8, "very_high"},
		{1, "very_high"},
		{-0.01, ""},
		{1.01, ""},
		{math.NaN(), ""},
		{math.Inf(1), ""},
	}
	for _, tc := range tests {
		if got := Bin(tc.conf); got != tc.want {
			t.Errorf("Bin(%v) = %q, want %q", tc.conf, got, tc.want)
		}
	}
}
