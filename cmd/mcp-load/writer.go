package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// writer changes the dataset in PostgreSQL and S3 and records every change
// in the oracle before and after it happens.
type writer struct {
	d      *dataset
	o      *oracle
	db     *database
	s3     *s3.Client
	bucket string
}

// putObject uploads the asset's object at generation gen and returns its
// ETag.
func (w *writer) putObject(ctx context.Context, k assetKey, gen int) (string, int, error) {
	body := w.d.content(kindObject, k, gen)
	out, err := w.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(objectKey(k)),
		Body: bytes.NewReader(body), ContentType: aws.String(w.d.mime(k))})
	if err != nil {
		return "", 0, fmt.Errorf("put object %s: %w", objectKey(k), err)
	}
	return aws.ToString(out.ETag), len(body), nil
}

// load writes generation 0 of every asset and grants every principal every
// asset, then returns the oracle of that state.
func (w *writer) load(ctx context.Context) (*oracle, error) {
	for _, p := range w.d.projects {
		if err := w.db.exec(ctx, `INSERT INTO mcpres.projects (id, title) VALUES ($1, $2)`, p, "load project "+p); err != nil {
			return nil, err
		}
	}
	for _, k := range w.d.all() {
		etag, size, err := w.putObject(ctx, k, 0)
		if err != nil {
			return nil, err
		}
		err = w.db.exec(ctx, `INSERT INTO mcpres.assets (project_id, id, name, title, mime_type, body, body_is_text,
			object_bucket, object_key, object_etag, object_size) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			k.project, k.asset, name(k), title(0), w.d.mime(k), w.d.content(kindBody, k, 0), w.d.textual(k),
			w.bucket, objectKey(k), etag, size)
		if err != nil {
			return nil, fmt.Errorf("insert asset %s: %w", k, err)
		}
		for _, p := range w.d.principals {
			err := w.db.exec(ctx, `INSERT INTO mcpres.grants (principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri)
				VALUES ($1, $2, $3, true, true, true)`, p, k.project, k.asset)
			if err != nil {
				return nil, fmt.Errorf("grant %s to %s: %w", k, p, err)
			}
		}
	}
	w.o = newOracle(w.d, time.Now())
	return w.o, nil
}

// overwrite writes the asset's next generation: first its object, which
// turns the ETag that the row pins stale, then, after a pause that leaves
// the stale pin in place for a while, the row (title, inline body and
// object reference in one UPDATE, which bumps the version).
//
// The generation's timeline starts only at the UPDATE: the server plans
// from the row, so until the row names the new object it may serve
// neither (the old object is gone from the unversioned bucket, the new one
// fails the pinned If-Match). A server that served the new object under
// the old row's plan is caught as serving a generation not yet current.
func (w *writer) overwrite(ctx context.Context, k assetKey, pause time.Duration) error {
	gen := w.o.gens[k].current() + 1
	etag, size, err := w.putObject(ctx, k, gen)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pause):
	}
	commit := w.o.gens[k].begin(gen, time.Now())
	err = w.db.exec(ctx, `UPDATE mcpres.assets SET title = $3, body = $4, object_etag = $5, object_size = $6
		WHERE project_id = $1 AND id = $2`, k.project, k.asset, title(gen), w.d.content(kindBody, k, gen), etag, size)
	if err != nil {
		return fmt.Errorf("overwrite %s: %w", k, err)
	}
	commit(time.Now())
	return nil
}

// setGrant changes principal's grant on the asset.
func (w *writer) setGrant(ctx context.Context, principal string, k assetKey, g grant) error {
	commit := w.o.grants[principal][k].begin(g, time.Now())
	discover, read := g.flags()
	err := w.db.exec(ctx, `UPDATE mcpres.grants SET can_discover = $4, can_read = $5
		WHERE principal = $1 AND project_id = $2 AND asset_id = $3`, principal, k.project, k.asset, discover, read)
	if err != nil {
		return fmt.Errorf("grant %s to %s: %w", k, principal, err)
	}
	commit(time.Now())
	return nil
}

// restoreGrants gives back every grant that a fault took and returns how
// many.
func (w *writer) restoreGrants(ctx context.Context) (int, error) {
	n := 0
	for _, p := range w.d.principals {
		for _, k := range w.d.all() {
			if w.o.grants[p][k].current() != granted {
				if err := w.setGrant(ctx, p, k, granted); err != nil {
					return n, err
				}
				n++
			}
		}
	}
	return n, nil
}

// faulter injects faults while clients load the server: it terminates the
// server's PostgreSQL backends, restarts the S3 server, revokes and
// restores grants, and overwrites rows and objects.
type faulter struct {
	w   *writer
	s3  *s3server
	rng *rand.Rand

	mu     sync.Mutex
	counts map[string]int
}

// Fault names, the keys of the fault tally.
const (
	faultOverwrite = "overwrite row+object"
	faultRevoke    = "revoke grant"
	faultRestore   = "restore grant"
	faultTerminate = "terminate backends"
	faultS3        = "restart S3 server"
)

func (f *faulter) count(name string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[name] += n
}

// tally returns the faults injected so far.
func (f *faulter) tally() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

// s3Gap is the time between two S3 restarts, so that most of the fault
// window has S3 up.
const s3Gap = 3 * time.Second

// run injects one fault every interval until the deadline, then restores
// every grant. Any failure of its own writes ends the run: the oracle
// would no longer know the state.
func (f *faulter) run(ctx context.Context, until time.Time, interval time.Duration) error {
	lastS3 := time.Now().Add(-s3Gap / 2) // the first restart comes early
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for time.Now().Before(until) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		var err error
		switch n := f.rng.IntN(100); {
		case time.Since(lastS3) >= s3Gap:
			f.s3.kill()
			time.Sleep(time.Duration(200+f.rng.IntN(600)) * time.Millisecond)
			err = f.s3.start()
			lastS3 = time.Now()
			f.count(faultS3, 1)
		case n < 15:
			var killed int
			killed, err = f.w.db.terminate(ctx)
			f.count(faultTerminate, 1)
			f.count("backends terminated", killed)
		case n < 55:
			err = f.grantFault(ctx)
		default:
			all := f.w.d.all()
			err = f.w.overwrite(ctx, all[f.rng.IntN(len(all))], time.Duration(100+f.rng.IntN(200))*time.Millisecond)
			f.count(faultOverwrite, 1)
		}
		if err != nil {
			return err
		}
	}
	n, err := f.w.restoreGrants(ctx)
	f.count(faultRestore, n)
	return err
}

// grantFault revokes a standing grant (deny the read, or hide the asset)
// or restores a revoked one, on a non-anchor asset.
func (f *faulter) grantFault(ctx context.Context) error {
	d := f.w.d
	p := d.principals[f.rng.IntN(len(d.principals))]
	var candidates []assetKey
	for _, k := range d.all() {
		if !d.anchor(k) {
			candidates = append(candidates, k)
		}
	}
	k := candidates[f.rng.IntN(len(candidates))]
	if f.w.o.grants[p][k].current() != granted {
		f.count(faultRestore, 1)
		return f.w.setGrant(ctx, p, k, granted)
	}
	g := denied
	if f.rng.IntN(2) == 0 {
		g = hidden
	}
	f.count(faultRevoke, 1)
	return f.w.setGrant(ctx, p, k, g)
}
