package config

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// TestStoreErrorsLandAtThePathTheyName proves a store's mistake goes to
// the key its core.ConfigPath names, and inside a statement to the byte an
// *postgres.SQLError names, with no reading of the error's text: each
// error's Field says nothing about where it belongs.
func TestStoreErrorsLandAtThePathTheyName(t *testing.T) {
	f, err := Parse("good.yaml", []byte(good), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	at := func(p core.ConfigPath, cause error) error {
		ce := core.NewConfigError("mute", "broken", cause)
		ce.Path = p
		return ce
	}
	cases := []struct {
		err    error
		source string
		want   string
	}{
		{at(core.ConfigPath{Source: "db", Binding: "doc", Field: "Plan"}, nil), "db", "good.yaml:20:11: resources.doc.plan: broken"},
		{at(core.ConfigPath{Source: "db", Binding: "doc", Field: "Plan"}, &postgres.SQLError{Offset: strings.Index(f.Resources[0].Plan, "$id")}), "db",
			"good.yaml:22:49: resources.doc.plan: broken"},
		{at(core.ConfigPath{Source: "db", Binding: "doc", Field: "Body"}, &postgres.SQLError{Offset: 7}), "db", "good.yaml:23:18: resources.doc.body: broken"},
		{at(core.ConfigPath{Source: "db", Binding: "reports", Field: "Grant"}, nil), "db", "good.yaml:31:13: resources.reports.grant.keys: broken"},
		{at(core.ConfigPath{Binding: "reports", Field: "MaxDepth"}, nil), "files", "good.yaml:28:16: resources.reports.max_depth: broken"},
		{at(core.ConfigPath{Binding: "reports", Field: "URI"}, nil), "files", "good.yaml:25:15: resources.reports.template: broken"},
		{at(core.ConfigPath{Source: "db", Field: "Role"}, nil), "db", "good.yaml:6:13: sources.db.postgres.role: broken"},
		{at(core.ConfigPath{Source: "db", Field: "Decide"}, nil), "db", "good.yaml:15:11: policy.decide: broken"},
		{at(core.ConfigPath{Field: "SecretAccessKey"}, nil), "files", "good.yaml:12:19: sources.files.s3.secret_key: broken"},
		{at(core.ConfigPath{Field: "Bucket"}, nil), "files", "good.yaml:9:15: sources.files.s3.bucket: broken"},
		{at(core.ConfigPath{Source: "db", Field: "StatementTimeout"}, nil), "db", "good.yaml:4:5: sources.db.postgres.statement_timeout: broken"},
		{at(core.ConfigPath{Field: "Principal"}, nil), "db", "good.yaml:3:3: mute: broken"}, // no key of the file writes it
		{fmt.Errorf("no store said where"), "db", "good.yaml:3:3: no store said where"},
	}
	for i, tc := range cases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			got := f.storeError(tc.err, tc.source, f.Sources[0].Spans.start())
			if got == nil || got.Error() != tc.want {
				t.Errorf("storeError(%v) = %v, want %s", tc.err, got, tc.want)
			}
		})
	}
}
