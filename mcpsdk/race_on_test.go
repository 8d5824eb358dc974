//go:build race

package mcpsdk

// raceDetector reports whether the tests are built with -race.
const raceDetector = true
