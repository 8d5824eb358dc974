package postgres

import (
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Key payloads: what a NOTIFY on a channel that [SQLBinding].Listen names
// carries, and the change keys the listener reports for it.
//
//	KEY        the item whose plan row had key KEY changed (or was
//	           inserted, deleted, granted or revoked)
//	PREFIX/*   every item whose key starts with PREFIX/ changed
//	* or ""    every item of the channel changed
//
// Every payload also changes every bundle of the channel, whose membership
// the change may alter. Keys and prefixes are compared as the plan's key
// column renders them as text.
const (
	keySep     = "\x1f"
	keyAll     = "*"
	keyAnyItem = "+" // a bundle's key: any change on the channel
)

// payloadKeys returns the change keys of one payload on channel.
func payloadKeys(channel, payload string) []string {
	if payload == "" || payload == keyAll {
		return []string{channel + keySep + keyAll, channel + keySep + keyAnyItem}
	}
	return []string{channel + keySep + payload, channel + keySep + keyAnyItem}
}

// itemKeys returns the change keys an item with key depends on, on channel:
// the key, every prefix of it ending in '/' followed by "*", and "*".
func itemKeys(channel, key string) []string {
	out := []string{channel + keySep + key, channel + keySep + keyAll}
	for i := 0; i < len(key)-1; i++ {
		if key[i] == '/' {
			out = append(out, channel+keySep+key[:i+1]+keyAll)
		}
	}
	return out
}

// Listener returns the [core.ChangeSource] of the source's bindings that
// name a channel ([SQLBinding].Listen): one dedicated connection, opened
// from cfg (which must reach PostgreSQL directly, not through a
// transaction-pooling PgBouncer), LISTENs on every channel they name, and
// each notification's payload is a changed key (see the payload forms
// above). A target's change keys are its row's key on its binding's
// channel; a bundle depends on every change on its channel. The listener
// reconnects with backoff and reports core.Change{All: true} after each
// connection (see [Listener]).
//
// Register every binding first: bindings added later are not covered. It
// returns a *core.ConfigError when no binding of the source names a
// channel.
func (src *Source) Listener(cfg *pgx.ConnConfig, opts *ListenerOptions) (*Listener, error) {
	src.mu.Lock()
	channels := map[string]string{} // binding -> channel
	for name, ch := range src.listen {
		channels[name] = ch
	}
	src.mu.Unlock()
	if len(channels) == 0 {
		return nil, core.ConfigPath{Source: src.name, Field: "Listener"}.Reject("no binding names a channel (SQLBinding.Listen)", nil)
	}
	l, err := newListener(cfg, opts)
	if err != nil {
		return nil, err
	}
	for _, ch := range channels {
		if !slices.Contains(l.channels, ch) {
			l.channels = append(l.channels, ch)
		}
	}
	slices.Sort(l.channels)
	name := src.name
	l.changeKeys = func(t core.ResourceTarget) []string {
		r, ok := parseSQLRef(t)
		if !ok || r.Source != name {
			return nil
		}
		ch, ok := channels[r.Binding]
		switch {
		case !ok:
			return nil
		case r.Kind == refBundle:
			return []string{ch + keySep + keyAnyItem}
		}
		return itemKeys(ch, r.Key)
	}
	return l, nil
}

// ValidChannel reports whether ch is a channel name [SQLBinding].Listen
// accepts: 1 to 63 lowercase letters, digits and _, not starting with a
// digit, so that it needs no quoting in LISTEN.
func ValidChannel(ch string) bool {
	if ch == "" || len(ch) > 63 || strings.ContainsAny(ch[:1], "0123456789") {
		return false
	}
	for _, c := range ch {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
