package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// TestStoreErrorsLandAtThePathTheyName proves a store's mistake goes to
// the key its core.ConfigPath names, and inside a statement to the byte an
// *postgres.SQLError names, with no reading of the error's text.
func TestStoreErrorsLandAtThePathTheyName(t *testing.T) {
	f, err := Parse("good.yaml", []byte(good), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	at := func(p core.ConfigPath, cause error) error { return p.Reject("broken", cause) }
	cases := []struct {
		err    error
		source string
		want   string
	}{
		{at(core.ConfigPath{Source: "db", Binding: "doc", Field: "Plan"}, nil), "db", "good.yaml:20:11: resources.doc.plan: broken"},
		{at(core.ConfigPath{Source: "db", Binding: "doc", Field: "Plan"}, &postgres.SQLError{Offset: strings.Index(f.Resources[0].Plan, "$id")}), "db",
			"good.yaml:22:49: resources.doc.plan: broken"},
		{at(core.ConfigPath{Source: "db", Binding: "doc"}, nil), "db", "good.yaml:17:3: resources.doc: broken"}, // the binding as a whole
		{at(core.ConfigPath{Source: "db", Binding: "doc", Field: "Body"}, &postgres.SQLError{Offset: 7}), "db", "good.yaml:23:18: resources.doc.body: broken"},
		{at(core.ConfigPath{Source: "db", Binding: "reports", Field: "Grant"}, nil), "db", "good.yaml:31:13: resources.reports.grant.keys: broken"},
		{at(core.ConfigPath{Binding: "reports", Field: "MaxDepth"}, nil), "files", "good.yaml:28:16: resources.reports.max_depth: broken"},
		{at(core.ConfigPath{Binding: "reports", Field: "URI"}, nil), "files", "good.yaml:25:15: resources.reports.template: broken"},
		{at(core.ConfigPath{Source: "db", Field: "Role"}, nil), "db", "good.yaml:6:13: sources.db.postgres.role: broken"},
		{at(core.ConfigPath{Source: "db", Field: "Decide"}, nil), "db", "good.yaml:15:11: policy.decide: broken"},
		{at(core.ConfigPath{Field: "SecretAccessKey"}, nil), "files", "good.yaml:12:19: sources.files.s3.secret_key: broken"},
		{at(core.ConfigPath{Field: "Bucket"}, nil), "files", "good.yaml:9:15: sources.files.s3.bucket: broken"},
		{at(core.ConfigPath{Source: "db", Field: "StatementTimeout"}, nil), "db", "good.yaml:4:5: sources.db.postgres.statement_timeout: broken"},
		{at(core.ConfigPath{Field: "Principal"}, nil), "db", "good.yaml:3:3: Principal: broken"}, // no key of the file writes it: the words of the path
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

// TestStoreErrorKeyIsTheFilesKey proves a store's *core.ConfigError
// reaches the caller of Parse as a *Error whose Key is the file's key its
// core.ConfigPath names and whose Reason is the store's own, intact: a
// caller maps the mistake by Key and shows Reason, never cuts the text.
func TestStoreErrorKeyIsTheFilesKey(t *testing.T) {
	storeReason := func(err error) string {
		t.Helper()
		ce, ok := errors.AsType[*core.ConfigError](err)
		if !ok {
			t.Fatalf("the store accepted it: %v", err)
		}
		return ce.Reason
	}
	cases := []struct {
		name, from, to, key, reason string
	}{
		{"a role the store refuses", "role: reader", `role: "a\tb"`, "sources.db.postgres.role",
			storeReason(postgres.CheckSource(postgres.SourceOptions{Name: "db", Role: "a\tb"}))},
		{"a plan the store refuses", "FROM docs WHERE tenant = $tenant AND id = $id", "FROM docs WHERE tenant = $tenant AND id = $nope",
			"resources.doc.plan", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("good.yaml", []byte(strings.Replace(good, tc.from, tc.to, 1)), testOptions)
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("Parse: %v, want a *config.Error", err)
			}
			if e.Key != tc.key || (tc.reason != "" && e.Reason != tc.reason) || strings.HasPrefix(e.Reason, tc.key) {
				t.Errorf("Key %q, Reason %q; want Key %q, Reason %q (the store's, without the key)", e.Key, e.Reason, tc.key, tc.reason)
			}
			if want := tc.key + ": " + e.Reason; !strings.HasSuffix(e.Error(), want) {
				t.Errorf("Error() = %q, want it to end in %q", e.Error(), want)
			}
		})
	}
}
