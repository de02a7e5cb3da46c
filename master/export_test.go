package master

// RaceEnabled tells the external tests whether the race detector is on.
const RaceEnabled = raceEnabled

// Datagrams yields the datagrams of a frame, for the external tests'
// segments and taps (datagrams in bus_test.go).
var Datagrams = datagrams
