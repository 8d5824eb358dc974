package config

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"reflect"
	"slices"
	"strconv"
)

// revisionDomain separates the file's revision from every other digest.
const revisionDomain = "go.phpboyscout.uk/mcp/resources file revision v1\x00"

// Revision is a digest of everything in the file that decides what is
// served and to whom: every source, statement, template, grant, policy and
// limit, with each [Env] value as expanded and each [Secret] as written
// (its ${NAME}, never its value); not the file's name, comments, layout or
// key order. Two files with the same revision serve alike from the same
// environment; a change to any SQL or to the policy changes it.
func (f *File) Revision() string {
	h := sha256.New()
	h.Write([]byte(revisionDomain))
	revisionOf(h, reflect.ValueOf(*f), true)
	return hex.EncodeToString(h.Sum(nil))
}

func revisionOf(h hash.Hash, v reflect.Value, top bool) {
	str := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			str("nil")
			return
		}
		str("ptr")
		revisionOf(h, v.Elem(), false)
	case reflect.Struct:
		if v.Type() == typeSecret {
			str(v.Interface().(Secret).raw)
			return
		}
		t := v.Type()
		for i := range t.NumField() {
			fld := t.Field(i)
			if !fld.IsExported() || fld.Type == typeSpans || (top && fld.Name == "Name") {
				continue
			}
			str(fld.Name)
			revisionOf(h, v.Field(i), false)
		}
	case reflect.Slice:
		str(strconv.Itoa(v.Len()))
		for i := range v.Len() {
			revisionOf(h, v.Index(i), false)
		}
	case reflect.Map:
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		slices.Sort(keys)
		str(strconv.Itoa(len(keys)))
		for _, k := range keys {
			str(k)
			revisionOf(h, v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())), false)
		}
	case reflect.String:
		str(v.String())
	case reflect.Bool:
		str(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int64:
		str(strconv.FormatInt(v.Int(), 10))
	case reflect.Float64:
		str(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	default:
		str(v.Type().String() + ":" + fmt.Sprint(v.Interface()))
	}
}
