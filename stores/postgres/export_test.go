package postgres

// SetProof turns the proof of Source.Check on or off, for the benchmark
// that measures what it costs.
func SetProof(on bool) { proofOff.Store(!on) }
