package core

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchResources serves one bundle of n in-memory 1 KiB text items under an
// allow-all policy: what remains is the gateway's own cost.
func benchResources(b *testing.B, n int) *Resources {
	body := strings.Repeat("abcdefgh", 128)
	targets := make([]ResourceTarget, n)
	for i := range targets {
		targets[i], _ = NewResourceTarget(fmt.Sprintf("mem://bundle/item/%d", i), "item", nil)
	}
	req, _ := NewResourceTarget("mem://bundle", "bundle", nil)
	plan, err := NewResourceReadPlan(req, targets...)
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewResources([]ResourceBinding{{
		Definition: ResourceDefinition{URI: "mem://bundle", Name: "bundle"},
		Resolver:   ResolverFunc(func(context.Context, ResourceMatch) (ResourceReadPlan, error) { return plan, nil }),
		Reader: ItemReader(func(context.Context, ReadItem) (ResourcePayload, error) {
			return TextPayload("text/plain", body), nil
		}),
	}}, PerTarget(TargetPolicy{
		Discover:   func(context.Context, ResourceDefinition) error { return nil },
		Visibility: func(context.Context, ResourceTarget) (Visibility, error) { return Visibility{Visible: true}, nil },
		Read:       func(context.Context, ResourceTarget) error { return nil },
	}))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkRead(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			r := benchResources(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := r.Read(ctx, "mem://bundle")
				if err != nil || len(res.Items()) != n {
					b.Fatalf("read: %v", err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
		})
	}
}

// BenchmarkSizing compares what admission pays to size a result with what
// encoding it costs.
func BenchmarkSizing(b *testing.B) {
	// Prose with a line break every ~80 bytes, and JSON rows (a quote every few bytes).
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog, again & again <3 and once more.\n", 16)
	row := strings.Repeat(`{"id":42,"title":"Hello, world","tags":["a","b"],"note":"line\nbreak"}`, 16)
	blob := make([]byte, 1024)
	items := make([]ResourceItem, 64)
	for i := range items {
		var p ResourcePayload
		switch i % 3 {
		case 0:
			p = TextPayload("text/plain", prose)
		case 1:
			p = TextPayload("application/json", row)
		default:
			p = BlobPayload("application/octet-stream", blob)
		}
		items[i] = ResourceItem{uri: fmt.Sprintf("mem://bundle/item/%d", i), payload: p}
	}
	b.Run("sizer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var n int64
			for _, it := range items {
				n += itemEncodedSize(it.uri, it.payload, nil) + 1
			}
			if n == 0 {
				b.Fatal("zero size")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		type content struct {
			URI      string  `json:"uri"`
			MIMEType string  `json:"mimeType"`
			Text     *string `json:"text,omitempty"`
			Blob     *[]byte `json:"blob,omitempty"`
		}
		b.ReportAllocs()
		for b.Loop() {
			cs := make([]content, len(items))
			for i, it := range items {
				cs[i] = content{URI: it.uri, MIMEType: it.payload.mimeType}
				if it.IsBlob() {
					cs[i].Blob = &it.payload.blob
				} else {
					cs[i].Text = &it.payload.text
				}
			}
			enc := json.NewEncoder(io.Discard)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(cs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
