package sharefetch

import (
	"strconv"
	"strings"
	"time"
)

// ParseISODuration parses the ISO-8601 durations share.auto.offset.reset's
// by_duration takes, as Java's Duration.parse: PnDTnHnMn.nS (days, hours,
// minutes, seconds, each optional, at least one); negative durations are
// refused.
func ParseISODuration(s string) (time.Duration, bool) {
	s = strings.ToUpper(s)
	if !strings.HasPrefix(s, "P") || len(s) < 3 {
		return 0, false
	}
	s = s[1:]
	var d time.Duration
	inTime := false
	seen := false
	for len(s) > 0 {
		if s[0] == 'T' {
			if inTime {
				return 0, false
			}
			inTime = true
			s = s[1:]
			if s == "" {
				return 0, false
			}
			continue
		}
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		if i == 0 || i == len(s) {
			return 0, false
		}
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || n < 0 {
			return 0, false
		}
		var unit time.Duration
		switch {
		case s[i] == 'D' && !inTime:
			unit = 24 * time.Hour
		case s[i] == 'H' && inTime:
			unit = time.Hour
		case s[i] == 'M' && inTime:
			unit = time.Minute
		case s[i] == 'S' && inTime:
			unit = time.Second
		default:
			return 0, false
		}
		if strings.Contains(s[:i], ".") && s[i] != 'S' {
			return 0, false
		}
		d += time.Duration(n * float64(unit))
		seen = true
		s = s[i+1:]
	}
	return d, seen
}
