package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestSecretsNeverPrint proves that a loaded file printed every way a
// program might print it (fmt verbs, JSON, slog) shows no secret, while
// Value hands the expanded secret to the driver.
func TestSecretsNeverPrint(t *testing.T) {
	f, err := Parse("good.yaml", []byte(good), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	s3 := f.Sources[1].S3
	if s3.SecretKey.expanded() != canary || !strings.Contains(f.Sources[0].Postgres.URL.expanded(), canary) {
		t.Fatal("the secrets were not expanded")
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%v %+v %#v %s", f, f.Sources, f.Sources[1].S3, f.Sources[0].Postgres.URL)
	j, _ := json.Marshal(f)
	buf.Write(j)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("loaded", "source", f.Sources[0].Postgres, "url", f.Sources[0].Postgres.URL, "s3", s3)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("loaded", "s3", *s3, "key", s3.SecretKey)
	if strings.Contains(buf.String(), canary) {
		t.Fatalf("a secret was printed: %s", buf.String())
	}
	if !strings.Contains(buf.String(), "[secret]") {
		t.Fatalf("the secrets should print as [secret]: %s", buf.String())
	}
}

// TestExpand proves the ${NAME} rules: every reference expanded once, a
// lone $ kept, a bad or unset reference refused by name only.
func TestExpand(t *testing.T) {
	env := func(n string) (string, bool) {
		switch n {
		case "A":
			return "${B}$", true
		case "E":
			return "", true // set but empty: the default applies
		}
		return "", false
	}
	for raw, want := range map[string]string{"x${A}y": "x${B}$y", "$5 and $x": "$5 and $x", "${A}${A}": "${B}$${B}$",
		"${B:-}": "", "${B:-us-east-1}": "us-east-1", "${A:-x}": "${B}$", "${E:-d}": "d", "a${B:-:-}b": "a:-b"} {
		if got, bad := expand(raw, env); bad != "" || got != want {
			t.Errorf("expand(%q) = %q, %q; want %q", raw, got, bad, want)
		}
	}
	for raw, want := range map[string]string{"${B}": "B is not set", "${A": "closing", "${1A}": "must name", "${}": "must name",
		"${:-x}": "must name", "${B-x}": "must name", "${A:-x": "closing"} {
		if _, bad := expand(raw, env); !strings.Contains(bad, want) {
			t.Errorf("expand(%q) problem %q, want %q", raw, bad, want)
		}
	}
}
