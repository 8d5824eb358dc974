package postgres

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeSQLRef: whatever the authorization data, decodeSQLRef answers
// exactly as json.Unmarshal does (the same error-ness and the same sqlRef),
// and the plain shape it reads itself is what json.Marshal writes.
func FuzzDecodeSQLRef(f *testing.F) {
	for _, r := range []sqlRef{
		{Kind: refRow, Source: "postgres", Binding: "asset-body", Key: "p/a", Version: "1", MIME: "text/plain", Text: true},
		{Kind: refRow, Source: "postgres", Binding: "asset-body", Key: "p/a", Version: "1", MIME: "image/png", Grants: &grantFlags{Visible: true, Read: true, Disclose: true}},
		{Kind: refRow, Source: "docs", Binding: "doc", Key: "k", Version: "v", Grants: &grantFlags{}},
		{Kind: refBundle, Source: "postgres", Binding: "project"},
		{Kind: refObject, Source: "postgres", Binding: "asset", Key: "p/a", Version: "1", Grants: &grantFlags{Read: true}},
		{Kind: refRow, Source: "pöstgres", Binding: "a\"b", Key: "\u0000", Version: "1"},
	} {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{}`, `null`, `{"k":"row","k":"bundle"}`, `{"g":{"v":true},"g":{"r":true}}`, `{"K":"row"}`,
		`{"t":true} `, `{"g":null}`, `{"t":"yes","k":"row"}`, `{"k":"row",}`, `{"g":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want sqlRef
		gerr := decodeSQLRef(data, &got)
		werr := json.Unmarshal(data, &want)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: decodeSQLRef %v, json.Unmarshal %v", data, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeSQLRef %+v, json.Unmarshal %+v", data, got, want)
		}
	})
}

// TestDecodeSQLRefReadsWhatMarshalWrites: the targets the binding plans
// for rows, with and without grant flags, take the plain path.
func TestDecodeSQLRefReadsWhatMarshalWrites(t *testing.T) {
	for _, r := range []sqlRef{
		{Kind: refRow, Source: "postgres", Binding: "asset-body", Key: "p/a", Version: "3", MIME: "text/markdown", Text: true, Grants: &grantFlags{Visible: true, Read: true}},
		{Kind: refBundle, Source: "postgres", Binding: "project"},
	} {
		b, _ := json.Marshal(r)
		var got sqlRef
		if !plainSQLRef(b, &got) || !reflect.DeepEqual(got, r) {
			t.Errorf("%s: plain %+v, want %+v", b, got, r)
		}
	}
}
