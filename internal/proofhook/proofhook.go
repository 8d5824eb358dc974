// Package proofhook holds the one switch that skips the proof from
// PostgreSQL's catalog that storage enforces access (stores/postgres), so
// that a benchmark in a package that builds on the store (the command's
// start-up) can measure what the proof adds, with it and without it in one
// process. No flag, setting or exported name of the module reaches it: a
// server and a host always prove, and a test of this package fails when
// code other than the store and tests names it.
package proofhook

import "sync/atomic"

// Off, when true, makes the store skip the proof (its Check and Prove
// accept every statement as the catalog shows it). Only benchmarks set it.
var Off atomic.Bool
