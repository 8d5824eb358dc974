package postgres

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

func TestNotificationPayloadsBecomeTheKeysOfTheTargetsTheyConcern(t *testing.T) {
	for payload, want := range map[string][]string{
		`{"t":"a","p":"p1","a":"x"}`: {AssetChangeKey("p1", "x"), keyProject + "p1"},
		`{"t":"g","p":"p1","a":"x"}`: {AssetChangeKey("p1", "x"), keyProject + "p1", keyProjects},
		`{"t":"g","p":"p1"}`:         {keyGrants + "p1", keyProject + "p1", keyProjects},
		`{"t":"p","p":"p1"}`:         {keyProject + "p1", keyProjects},
		`{"t":"a","p":"p1"}`:         nil,
		`{"t":"z","p":"p1"}`:         nil,
		`not json`:                   nil,
		``:                           nil,
	} {
		if got := notificationKeys(payload); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", payload, got, want)
		}
	}
}

func TestChangeKeysMatchWhatTheTriggersReport(t *testing.T) {
	l, err := NewListener(mustConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The targets as the store's bindings plan them.
	fields := rowTarget(t, "asset://project/p1/asset/x", "asset", "p1/x")
	body := rowTarget(t, "asset://project/p1/asset/x/body", "asset-body", "p1/x")
	index := rowTarget(t, IndexURI, "projects", "projects")
	project, _ := core.NewResourceTarget("asset://project/p1", reprSQLBundle, []byte(`{"k":"bundle","s":"postgres","b":"project"}`))
	escaped := rowTarget(t, "asset://project/p%2D1/asset/x%2Ey/body", "asset-body", "p-1/x.y")
	notAsset := rowTarget(t, "asset://project/p1/thing/x", "asset", "p1/x")
	joined, _ := core.NewResourceTarget("asset://project/p1/asset/x/object", "s3-object", []byte(`{"bucket":"b"}`))
	other, _ := core.NewResourceTarget("s3://bucket/key", "s3-object", nil)
	for name, c := range map[string]struct {
		t    core.ResourceTarget
		want []string
	}{
		"fields":                 {fields, []string{AssetChangeKey("p1", "x"), keyGrants + "p1"}},
		"body":                   {body, []string{AssetChangeKey("p1", "x"), keyGrants + "p1"}},
		"project":                {project, []string{keyProject + "p1", keyGrants + "p1"}},
		"index":                  {index, []string{keyProjects}},
		"object under the asset": {joined, []string{AssetChangeKey("p1", "x"), keyGrants + "p1"}},
		"foreign":                {other, nil},
		"escaped ids":            {escaped, []string{AssetChangeKey("p-1", "x.y"), keyGrants + "p-1"}},
		"not an asset's URI":     {notAsset, nil},
	} {
		if got := l.ChangeKeys(c.t); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

func mustConfig(t *testing.T) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig("postgres://x@127.0.0.1:1/x")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
