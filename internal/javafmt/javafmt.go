// Package javafmt writes values as Java prints them, where Kafka stores or shows that text.
package javafmt

import (
	"math"
	"strconv"
	"strings"
)

// Double is Java's Double.toString: the shortest digits that round-trip, plain with at least
// one fractional digit for 10^-3 <= |v| < 10^7, "d.dddE<n>" outside. Kafka stores DOUBLE
// quota values this way (1048576.0, 1.0E7) and kafka-configs.sh prints them so.
func Double(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	if v >= 1e-3 && v < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return sign + s
	}
	s := strconv.FormatFloat(v, 'e', -1, 64) // d[.ddd]e±xx
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return sign + mant + "E" + strconv.Itoa(e)
}
