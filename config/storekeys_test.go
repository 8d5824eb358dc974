package config

import (
	"reflect"
	"testing"

	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// TestStoreKeysFollowOneRule checks the rule fileKeys is derived under:
// every store:"NAME" tag of the model names a real field of the store's
// bindings or options (a renamed store field breaks this test, not a
// user's error line), and the fields the stores' paths name land at the
// keys the file writes them under.
func TestStoreKeysFollowOneRule(t *testing.T) {
	storeFields := map[string]bool{"db": true, "Decide": true} // postgres.NewSource's pool, Source.Policy's statement
	for _, st := range []reflect.Type{reflect.TypeFor[postgres.SourceOptions](), reflect.TypeFor[postgres.SQLBinding](),
		reflect.TypeFor[s3store.ClientConfig](), reflect.TypeFor[s3store.KeyFamily]()} {
		for i := range st.NumField() {
			storeFields[st.Field(i).Name] = true
		}
	}
	var tags func(reflect.Type)
	seen := map[reflect.Type]bool{}
	tags = func(mt reflect.Type) {
		if mt.Kind() == reflect.Pointer || mt.Kind() == reflect.Slice {
			mt = mt.Elem()
		}
		if mt.Kind() != reflect.Struct || seen[mt] {
			return
		}
		seen[mt] = true
		for i := range mt.NumField() {
			f := mt.Field(i)
			if s, ok := f.Tag.Lookup("store"); ok && !storeFields[s] {
				t.Errorf("%s.%s: store:%q names no field of a store", mt.Name(), f.Name, s)
			}
			tags(f.Type)
		}
	}
	tags(reflect.TypeFor[File]())

	for field, key := range map[string]string{
		"Plan": "plan", "Bundle": "bundle", "Body": "body", "ItemURI": "item_uri", "Listen": "listen", "Anchored": "anchored",
		"Prefix": "prefix", "MaxDepth": "max_depth", "ObjectURI": "object.uri", "ObjectSource": "object.source", "Grant": "grant.keys",
		"Role": "postgres.role", "LoginRole": "postgres.login_role", "MaxPlanItems": "postgres.max_plan_items",
		"StatementTimeout": "postgres.statement_timeout", "db": "postgres.url", "Decide": "postgres.policy.decide",
		"Exempt": "postgres.exempt", "SecretAccessKey": "s3.secret_key", "AccessKeyID": "s3.access_key",
	} {
		if !storeFields[field] {
			t.Errorf("%s is no field of a store", field)
		}
		if got := fileKeys[field]; got != key {
			t.Errorf("fileKeys[%s] = %q, want %q", field, got, key)
		}
	}
}
