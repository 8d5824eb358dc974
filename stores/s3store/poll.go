package s3store

import (
	"context"

	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Defaults of PollerOptions.
const (
	DefaultPollInterval       = 30 * time.Second
	DefaultPollHeadsPerSecond = 10
)

// PollerOptions configure a Poller. Zero fields select the defaults.
type PollerOptions struct {
	// Interval is the pause between two rounds over the tracked objects.
	// Default 30 s.
	Interval time.Duration
	// HeadsPerSecond bounds the HeadObject requests the poller sends.
	// Default 10.
	HeadsPerSecond int
	// Logger receives HEAD failures. Nil discards them.
	Logger *slog.Logger
}

// Poller is an optional core.ChangeSource (a live.Tracker: it has TrackKeys) for plain
// S3 bindings, whose objects no database row describes: it polls the
// identity metadata (HeadObject ETag and version id) of the objects that
// current subscriptions depend on, at a bounded rate, and reports an object
// whose identity changed, or that appeared or disappeared. Nothing polls
// unless a host creates a Poller and runs it; objects referenced by
// Postgres rows need none, because their row changes with them (see the
// postgres Listener).
//
// The poller sends its HEADs with the bucket's own client, not a
// principal's: it only detects changes. Whether a subscriber may still read
// the object is decided by the re-authorization that precedes each
// notification, under the subscriber's principal.
type Poller struct {
	b        *Bucket
	interval time.Duration
	gap      time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	keys   map[string]string // tracked object key -> last seen identity ("" unknown: not seen yet)
	rounds atomic.Int64
}

// Rounds counts the rounds over the tracked objects that Watch has
// completed. Every object tracked before a round began has its baseline
// once that round is counted, and a change made before a round began is
// reported by the time it is counted: an operator sees the poller advance,
// and a test waits for it instead of for a while.
func (p *Poller) Rounds() int64 { return p.rounds.Load() }

// Tracking returns how many objects the poller tracks now (see TrackKeys).
func (p *Poller) Tracking() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.keys)
}

// NewPoller returns a poller of b's objects.
func NewPoller(b *Bucket, opts *PollerOptions) *Poller {
	if b == nil {
		panic("s3store: NewPoller with a nil *Bucket")
	}
	p := &Poller{b: b, interval: DefaultPollInterval, gap: time.Second / DefaultPollHeadsPerSecond, keys: map[string]string{}}
	if opts != nil {
		if opts.Interval > 0 {
			p.interval = opts.Interval
		}
		if opts.HeadsPerSecond > 0 {
			p.gap = time.Second / time.Duration(opts.HeadsPerSecond)
		}
		p.log = opts.Logger
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p
}

// changeKeyPrefix starts the change keys of bucket's objects.
func changeKeyPrefix(bucket string) string { return "s3:" + bucket + "/" }

// changeKey returns the change key of the object key in bucket.
func changeKey(bucket, key string) string { return changeKeyPrefix(bucket) + key }

// ChangeKeys returns the change key of the object that a target built by
// NewObjectTarget names in the poller's bucket, and nil for any other
// target.
func (p *Poller) ChangeKeys(t core.ResourceTarget) []string {
	o, err := targetObject(t)
	if err != nil || o.Bucket != p.b.name {
		return nil
	}
	return []string{changeKey(o.Bucket, o.Key)}
}

// TrackKeys sets the objects to poll: the keys of this poller's bucket
// among keys. Objects no longer tracked are forgotten.
func (p *Poller) TrackKeys(keys []string) {
	prefix := changeKeyPrefix(p.b.name)
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make(map[string]string, len(keys))
	for _, k := range keys {
		if key, ok := strings.CutPrefix(k, prefix); ok {
			next[key] = p.keys[key]
		}
	}
	p.keys = next
}

// Watch polls the tracked objects, one HEAD per gap, a round per Interval,
// until ctx ends; it reports the change key of each object whose identity
// differs from the previous round's. The first sight of an object is its
// baseline, not a change.
func (p *Poller) Watch(ctx context.Context, changed func(core.Change)) error {
	for {
		p.mu.Lock()
		keys := make([]string, 0, len(p.keys))
		for k := range p.keys {
			keys = append(keys, k)
		}
		p.mu.Unlock()
		for _, key := range keys {
			id, err := p.identity(ctx, key)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				p.log.Warn("s3store poller: HEAD failed", "bucket", p.b.name, "err", err)
			} else if p.record(key, id) {
				changed(core.Change{Keys: []string{changeKey(p.b.name, key)}})
			}
			if err := sleep(ctx, p.gap); err != nil {
				return err
			}
		}
		p.rounds.Add(1)
		if err := sleep(ctx, p.interval); err != nil {
			return err
		}
	}
}

// record stores key's identity and reports whether it changed since a
// previous sight. An identity is never "" ("-" for no object).
func (p *Poller) record(key, id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, tracked := p.keys[key]
	if !tracked {
		return false
	}
	p.keys[key] = id
	return old != "" && old != id // the first sight (no identity yet) is the baseline
}

// identity is the ETag and version id of key's current version, or "-"
// when there is none (deleted, never written).
func (p *Poller) identity(ctx context.Context, key string) (string, error) {
	out, err := p.b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(p.b.name), Key: aws.String(key)})
	if err != nil {
		if core.KindOf(classify(err)) == core.FailureUnavailable {
			return "-", nil
		}
		return "", err
	}
	if aws.ToBool(out.DeleteMarker) {
		return "-", nil
	}
	return aws.ToString(out.ETag) + "\x00" + aws.ToString(out.VersionId), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
