package postgres

// SetProof turns the proof of Source.Check on or off, for the benchmark
// that measures what it costs.
func SetProof(on bool) { proofOff.Store(!on) }

// SetPipelined turns the pipelined check of Source.Check on or off (off:
// one statement after another), for the benchmark that compares them.
func SetPipelined(on bool) { sequentialCheck.Store(!on) }
