package postgres

import "context"

// Prove re-runs the source's storage-enforcement proof.
//
// stub until the proof lands: the proof branch replaces this file with the
// real proof, which fails (and makes the source refuse its reads) while a
// relation it reads is not enforced by row-level security.
func (src *Source) Prove(ctx context.Context) error { return nil }
