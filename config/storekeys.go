package config

import "reflect"

// fileKeys are the keys of the file that the Go fields the stores' paths
// name (core.ConfigPath.Field) are written under: a resource's own, under
// its object or grant, then a source's under postgres or s3.
var fileKeys = storeKeys()

// storeKeys derives fileKeys from the model under one rule: a store's
// field has the Go name of the field of a resource's kind
// ([PostgresResource], [S3Resource]) or a source's ([PostgresSource],
// [S3Source]) that holds its key, after the name of the field it is nested
// in (Object.URI is ObjectURI, under object.uri), unless a store:"NAME" tag
// names the store's field outright (the store's SecretAccessKey is
// secret_key). A key whose value is a mapping, such as object, is a
// prefix, not a field.
func storeKeys() map[string]string {
	keys := map[string]string{}
	var walk func(t reflect.Type, name, key string)
	walk = func(t reflect.Type, name, key string) {
		for _, kf := range keyedFields(t) {
			sf := t.FieldByIndex(kf.index)
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[Secret]() {
				walk(ft, name+sf.Name, key+kf.key+".")
				continue
			}
			field := name + sf.Name
			if s, ok := sf.Tag.Lookup("store"); ok {
				field = s
			}
			if k, dup := keys[field]; dup {
				panic("config: the store field " + field + " names both " + k + " and " + key + kf.key)
			}
			keys[field] = key + kf.key
		}
	}
	walk(reflect.TypeFor[PostgresResource](), "", "")
	walk(reflect.TypeFor[S3Resource](), "", "")
	walk(reflect.TypeFor[PostgresSource](), "", "postgres.")
	walk(reflect.TypeFor[S3Source](), "", "s3.")
	return keys
}
