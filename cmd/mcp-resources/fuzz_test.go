package main

import (
	"net/url"
	"testing"

	"go.phpboyscout.uk/mcp/resources/config"
)

// FuzzParseByteSize: parsing never panics, and a plain number parses to
// itself.
func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"0", "512", "64KiB", "4 MiB", "1GiB", "-1", "9223372036854775807", "1e3", " 7B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := config.ParseByteSize(s)
		if err != nil {
			return
		}
		if v > 1<<62 || v < -(1<<62) {
			t.Fatalf("%q parsed to %d, outside the documented range", s, v)
		}
	})
}

// FuzzValidOrigin: an --allowed-origins value the command accepts is an
// origin: an http or https URL with a host and nothing after it.
func FuzzValidOrigin(f *testing.F) {
	for _, s := range []string{"https://app.example", "http://a:80", "https://", "app.example", "https://a/b", "https://a?x", "http://a@b", "http://[::1]:8080"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, o string) {
		if !validOrigin(o) {
			return
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("%q accepted as an origin: %v %+v", o, err, u)
		}
	})
}
