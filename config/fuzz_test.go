package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse proves that no input ends the process or escapes the error
// shape: Parse either loads the file or returns one *Error whose text is
// one line starting with the file name and a line number, without the
// environment's secret.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	for _, p := range []string{"../examples/documents/resources.yaml", "../migrations/resources.yaml"} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("version: 1\nsources: {a: {postgres: {url: '${X}', role: r}}}\nresources: {r: {uri: 'a://b', source: a, policy: database, plan: 'SELECT $x', body: 'SELECT $key, $version'}}\n"))
	f.Add([]byte("version: 1\nsources: {a: {postgres: {url: '${X:-postgres://h/db}', role: r, listen_url: '${Y:-}'}}}\n"))
	f.Add([]byte("version: 1\nsources: {a: {postgres: {url: '${X}', role: r, standbys: ['${X}', 'host=h', '${Y:-}', 7], standby_max_lag: 2s}}}\n"))
	f.Add([]byte("a: &x [1]\nb: *x\n"))
	f.Add([]byte("version: 1\n---\nversion: 1\n"))
	f.Add([]byte("version: 1\nsources:\n  a:\n\tpostgres: {}\n"))
	f.Add([]byte("version: 1\nsources: {a: {postgres: {url: '${X}', role: r, policy: database}}, b: {s3: {bucket: bb}}}\n" +
		"resources: {r: {template: 'b://x/...', source: b, prefix: 'p/', max_depth: 2, grant: {source: a, keys: 'SELECT $key AS key'}}}\n"))
	f.Add([]byte(good + "oauth:\n  issuer: https://id.example.test/\n  resource: https://mcp.example.test/mcp\n  audiences: [api://default]\n" +
		"  claims: [realm_access.roles]\n  introspection: {url: 'https://id.example.test/i', client_id: c, client_secret: '${S}'}\n"))
	f.Add([]byte(good + "oauth: {issuer: 'http://a/', resource: 'http://b/', audiences: ['', x], introspection: {url: /i, client_secret: s3cr3t}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data, testOptions)
		if err == nil {
			if file == nil {
				t.Fatal("nil file without an error")
			}
			if r := file.Revision(); len(r) != 64 {
				t.Fatalf("revision %q", r)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("not a *config.Error: %T", err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "fuzz.yaml:") || strings.ContainsAny(msg, "\n\r") || e.Pos.Line < 0 {
			t.Fatalf("bad error line %q", msg)
		}
		if strings.Contains(msg, canary) {
			t.Fatalf("the error prints a secret: %q", msg)
		}
	})
}
