package config

import (
	"strings"
	"testing"
	"time"
)

// TestStandbysExpandAndCheckLikeURL: standbys is a list of URLs, each
// ${NAME} expanded as url is, never printed, with the same refusals (a
// written password, a URL of another kind), and standby_max_lag is a
// duration beside it.
func TestStandbysExpandAndCheckLikeURL(t *testing.T) {
	with := func(lines string) string {
		return strings.Replace(good, "      role: reader\n", "      role: reader\n"+lines, 1)
	}
	f, err := Parse("standbys.yaml", []byte(with("      standbys: ['${DB_URL}', 'host=standby dbname=docs']\n      standby_max_lag: 2s\n")), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Sources[0].Postgres
	if len(p.Standbys) != 2 || !strings.Contains(p.Standbys[0].expanded(), canary) || p.Standbys[1].expanded() != "host=standby dbname=docs" ||
		time.Duration(p.StandbyMaxLag) != 2*time.Second {
		t.Fatalf("standbys %v, max lag %v", p.Standbys, p.StandbyMaxLag)
	}
	if s := p.Standbys[0].String(); s != "[secret]" {
		t.Fatalf("a standby prints as %q", s)
	}
	for lines, want := range map[string]string{
		"      standbys: ['postgres://app:pw@h/db']\n": "sources.db.postgres.standbys.0: a password is written in the file",
		"      standbys: ['${BAD_DB_URL}']\n":          "sources.db.postgres.standbys.0: is not a PostgreSQL URL",
		"      standbys: '${DB_URL}'\n":                "expects a list of URLs",
		"      standbys: ['${UNSET}']\n":               "UNSET is not set",
		"      standbys: ['${EMPTY}']\n":               "is empty",
		"      standby_max_lag: -1s\n":                 "is not a positive duration",
		"      standbys: ['${DB_URL}']\n      x: 1\n":  "unknown key",
	} {
		_, err := Parse("standbys.yaml", []byte(with(lines)), testOptions)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), canary) {
			t.Errorf("%q: %v; want %q without the secret", lines, err, want)
		}
	}
}
