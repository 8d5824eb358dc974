package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
)

// The driver's own dataset: projects of assets whose inline bodies and
// objects embed the asset and its generation, so that every body a
// response carries can be traced back to exactly one write of the driver.
// Generation 0 is what setup inserts (row version 1); every overwrite
// writes generation g+1 with one UPDATE, so the row's version is always
// the generation plus one.

// dataset describes the owned data: its shape, not its current state
// (which the timelines in [oracle] hold).
type dataset struct {
	projects   []string
	assets     []string // ids, the same in every project
	principals []string
	// minBody, when set, is added to every body's size, so that bodies are
	// read by the body statement rather than planned inline (8 KiB at most).
	minBody int
}

// newDataset returns a dataset of np projects of na assets each, granted to
// the principals.
func newDataset(np, na int, principals []string) *dataset {
	d := &dataset{principals: principals}
	for i := range np {
		d.projects = append(d.projects, fmt.Sprintf("lp%d", i))
	}
	for i := range na {
		d.assets = append(d.assets, fmt.Sprintf("a%d", i))
	}
	return d
}

// assetKey names one asset of the dataset.
type assetKey struct{ project, asset string }

func (k assetKey) String() string { return k.project + "/" + k.asset }

// all returns every asset of the dataset in project, asset order.
func (d *dataset) all() []assetKey {
	var out []assetKey
	for _, p := range d.projects {
		for _, a := range d.assets {
			out = append(out, assetKey{p, a})
		}
	}
	return out
}

// anchor reports whether k is its project's anchor asset, whose grants are
// never revoked, so that every project stays discoverable to every
// principal.
func (d *dataset) anchor(k assetKey) bool { return k.asset == d.assets[0] }

// textual reports whether the asset's body and object are UTF-8 text
// (text/plain) rather than bytes (application/octet-stream): every other
// asset, so that both payload kinds are exercised.
func (d *dataset) textual(k assetKey) bool {
	for i, a := range d.assets {
		if a == k.asset {
			return i%2 == 0
		}
	}
	return false
}

func (d *dataset) mime(k assetKey) string {
	if d.textual(k) {
		return "text/plain"
	}
	return "application/octet-stream"
}

// objectKey is the S3 key of the asset's object.
func objectKey(k assetKey) string { return "load/" + k.project + "/" + k.asset }

// The representations a response item can carry for an asset.
const (
	kindBody   = "body"
	kindObject = "object"
	kindFields = "fields"
)

// header is the first line of every body and object the driver writes.
func header(kind string, k assetKey, gen int) string {
	return fmt.Sprintf("mcp-load %s %s/%s gen %d\n", kind, k.project, k.asset, gen)
}

var headerRE = regexp.MustCompile(`^mcp-load (body|object) ([A-Za-z0-9_-]+)/([A-Za-z0-9_-]+) gen ([0-9]{1,9})\n`)

// parseHeader returns what a body's first line claims: its kind, asset and
// generation.
func parseHeader(b []byte) (kind string, k assetKey, gen int, ok bool) {
	m := headerRE.FindSubmatch(b)
	if m == nil {
		return "", assetKey{}, 0, false
	}
	gen, err := strconv.Atoi(string(m[4]))
	if err != nil {
		return "", assetKey{}, 0, false
	}
	return string(m[1]), assetKey{string(m[2]), string(m[3])}, gen, true
}

// content returns the exact bytes of the asset's body or object at
// generation gen: the header, then deterministic filler (hex text for a
// text asset, raw bytes for a binary one). The total size varies by asset
// and kind but not by generation, so that only the identity the server
// pins (the row version, the ETag), never a size check, tells one
// generation from the next.
func (d *dataset) content(kind string, k assetKey, gen int) []byte {
	h := header(kind, k, gen)
	shape := sha256.Sum256([]byte(kind + " " + k.String()))
	total := 512 + int(shape[0])<<2 // 512 to 1532 bytes
	if kind == kindObject {
		total = 2048 + int(shape[1])<<4 // 2 to 6 KiB
	} else {
		total += d.minBody
	}
	out := make([]byte, 0, total+sha256.Size*2)
	out = append(out, h...)
	block := sha256.Sum256([]byte(h))
	for len(out) < total {
		if d.textual(k) {
			out = hex.AppendEncode(out, block[:])
		} else {
			out = append(out, block[:]...)
		}
		block = sha256.Sum256(block[:])
	}
	return out[:total]
}

// title is the asset's title at generation gen.
func title(gen int) string { return fmt.Sprintf("gen %d", gen) }

// name is the asset's name (constant across generations).
func name(k assetKey) string { return k.asset + ".dat" }

// URIs the server serves for the dataset (the reference schema's).
func projectURI(p string) string  { return "asset://project/" + p }
func fieldsURI(k assetKey) string { return projectURI(k.project) + "/asset/" + k.asset }
func bodyURI(k assetKey) string   { return fieldsURI(k) + "/body" }
func objectURI(k assetKey) string { return fieldsURI(k) + "/object" }

const indexURI = "asset://projects"

// templates are the URI templates the server lists with a bucket.
var templates = []string{
	"asset://project/{project}",
	"asset://project/{project}/asset/{asset}",
	"asset://project/{project}/asset/{asset}/body",
	"asset://project/{project}/asset/{asset}/object",
}
