//go:build race

package storetest

// raceDetector: the binary has the race detector (see concurrencyScale).
const raceDetector = true
