package config

import "strings"

// closestKey returns the known key a misspelt key most likely meant, or ""
// when none is close: first a match ignoring case, then the nearest key by
// edit distance if it is near enough, then the only key with the same last
// segment (a key put in the wrong section, or at the top level).
func closestKey(key string, known []string) string {
	lower := strings.ToLower(key)
	for _, k := range known {
		if k == lower {
			return k
		}
	}

	best, bestDist := "", len(lower)+1
	for _, k := range known {
		if d := EditDistance(lower, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if bestDist <= max(2, len(lower)/5) {
		return best
	}

	last := lower[strings.LastIndex(lower, ".")+1:]
	match := ""
	for _, k := range known {
		if k[strings.LastIndex(k, ".")+1:] == last {
			if match != "" {
				return "" // ambiguous
			}
			match = k
		}
	}
	return match
}

// EditDistance is the Levenshtein distance between a and b, in bytes (keys
// and command names are ASCII): the "did you mean" of a key and of a
// toolbox command.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
