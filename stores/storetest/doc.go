// Package storetest is the conformance suite that every store of this module
// runs: one call, Run, with a Harness that the store implements.
package storetest
