//go:build race

package integration

// raceEnabled: the test binary is race-built, so the broker is too, and
// workloads are scaled down (the race detector costs 5-10x CPU).
const raceEnabled = true
