package config

import (
	"strings"
	"testing"
	"time"
)

// The audit section sets the trail as the flags do, and each mistake in
// it is one error at its line that never prints a secret.
func TestAuditSection(t *testing.T) {
	f, err := Parse("good.yaml", []byte(good+"audit:\n  postgres: ${DB_URL}\n  on_failure: continue\n  queue: 10\n  timeout: 3s\n"), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	a := f.AuditSettings()
	if a == nil || !strings.Contains(a.PostgresURL, canary) || a.OnFailure != "continue" || a.Queue != 10 || a.Timeout != 3*time.Second || a.File != "" {
		t.Fatalf("AuditSettings %+v", a)
	}
	if g, err := Parse("good.yaml", []byte(good), testOptions); err != nil || g.AuditSettings() != nil {
		t.Fatalf("a file without audit: %v, %+v", err, g.AuditSettings())
	}
	cases := []struct{ name, section, want string }{
		{"no sink", "audit:\n  queue: 3\n", "audit: file or postgres is required"},
		{"two sinks", "audit:\n  file: /var/log/audit.jsonl\n  postgres: ${DB_URL}\n", "not both"},
		{"a bad mode", "audit:\n  file: a.jsonl\n  on_failure: sometimes\n", "must be refuse or continue"},
		{"a negative queue", "audit:\n  file: a.jsonl\n  queue: -1\n", "audit.queue: must not be negative"},
		{"a written password", "audit:\n  postgres: postgres://app:hunter2@db/audit\n", "password is written in the file"},
		{"not a PostgreSQL URL", "audit:\n  postgres: ${BAD_DB_URL}\n", "not a PostgreSQL URL"},
		{"an unknown key", "audit:\n  file: a.jsonl\n  mode: refuse\n", `unknown key "mode"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("good.yaml", []byte(good+c.section), testOptions)
			if err == nil {
				t.Fatal("accepted")
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, canary) || strings.Contains(msg, "hunter2") {
				t.Fatalf("error %q, want %q and no secret", msg, c.want)
			}
		})
	}
}
