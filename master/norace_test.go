//go:build !race

package master

// raceEnabled is true when the race detector is on; it allocates on
// synchronisation, so allocation tests skip.
const raceEnabled = false
