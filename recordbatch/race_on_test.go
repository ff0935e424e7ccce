//go:build race

package recordbatch

const raceEnabled = true
