//go:build race

package broker

// raceEnabled: the race detector's instrumentation moves values to the heap, so allocation
// counts are not the program's.
const raceEnabled = true
