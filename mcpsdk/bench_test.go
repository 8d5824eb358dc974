package mcpsdk

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/benchutil"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// The benchmarks compare a read through the adapter with the same content
// served by the SDK's own registry, in one run, over the in-memory
// transport with the SDK client at its default protocol. Compare the
// adapter and sdk sub-benchmarks of each pair; core is the same read made
// on the core directly, without the SDK and the transport. cpu-ns/op is the
// process's CPU time per read (client, server and runtime), steadier than
// ns/op on a shared machine.

var benchText = strings.Repeat("benchmark text ", 64) // ~1 KiB

// selfBinding plans the request URI as its one item and reads benchText.
func selfBinding(def core.ResourceDefinition) core.ResourceBinding {
	return core.ResourceBinding{
		Definition: def,
		Resolver: core.ResolverFunc(func(_ context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			t, err := core.NewResourceTarget(m.URI(), "text", nil)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			return core.NewResourceReadPlan(t, t)
		}),
		Reader: core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
			return core.TextPayload("text/plain", benchText), nil
		}),
	}
}

func sdkHandler(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: benchText}}}, nil
}

func benchClient(b *testing.B, s *mcp.Server) *mcp.ClientSession {
	b.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func benchRead(b *testing.B, cs *mcp.ClientSession, uri string) {
	b.Helper()
	ctx := context.Background()
	params := &mcp.ReadResourceParams{URI: uri}
	if res, err := cs.ReadResource(ctx, params); err != nil || res.Contents[0].Text != benchText {
		b.Fatalf("%v", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchutil.CPU(b)
	for b.Loop() {
		if _, err := cs.ReadResource(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	cpu()
}

// benchCore reads uri from r directly, without the SDK or a transport: what
// the MCP round trip through the adapter adds is adapter minus core.
func benchCore(b *testing.B, r *core.Resources, uri string) {
	b.Helper()
	ctx := context.Background()
	if res, err := r.Read(ctx, uri); err != nil || res.Items()[0].Text() != benchText {
		b.Fatalf("%v", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchutil.CPU(b)
	for b.Loop() {
		if _, err := r.Read(ctx, uri); err != nil {
			b.Fatal(err)
		}
	}
	cpu()
}

func BenchmarkReadExact(b *testing.B) {
	const uri = "bench://doc"
	b.Run("sdk", func(b *testing.B) {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
		s.AddResource(&mcp.Resource{URI: uri, Name: "doc", MIMEType: "text/plain"}, sdkHandler)
		benchRead(b, benchClient(b, s), uri)
	})
	r, err := core.NewResources([]core.ResourceBinding{selfBinding(core.ResourceDefinition{URI: uri, Name: "doc", MIMEType: "text/plain"})}, storetest.AllowAll())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("adapter", func(b *testing.B) {
		s, _ := adapted(&mcp.Implementation{Name: "bench", Version: "v1"}, nil, r, nil)
		benchRead(b, benchClient(b, s), uri)
	})
	b.Run("core", func(b *testing.B) { benchCore(b, r, uri) })
}

// BenchmarkReadLastOf10kTemplates reads a URI that only the last of 10,000
// templates matches (the SDK tries its templates in sorted order, parsing
// each one per request; core walks a segment trie).
func BenchmarkReadLastOf10kTemplates(b *testing.B) {
	const n = 10000
	tmpl := func(i int) string { return fmt.Sprintf("bench://t/%05d/{id}", i) }
	uri := fmt.Sprintf("bench://t/%05d/x", n-1)
	b.Run("sdk", func(b *testing.B) {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
		for i := range n {
			s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tmpl(i), Name: fmt.Sprint(i), MIMEType: "text/plain"}, sdkHandler)
		}
		benchRead(b, benchClient(b, s), uri)
	})
	b.Run("adapter", func(b *testing.B) {
		bs := make([]core.ResourceBinding, n)
		for i := range n {
			bs[i] = selfBinding(core.ResourceDefinition{URITemplate: tmpl(i), Name: fmt.Sprint(i), MIMEType: "text/plain"})
		}
		r, err := core.NewResources(bs, storetest.AllowAll())
		if err != nil {
			b.Fatal(err)
		}
		s, _ := adapted(&mcp.Implementation{Name: "bench", Version: "v1"}, nil, r, nil)
		benchRead(b, benchClient(b, s), uri)
	})
}

var benchBlob = bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6, 7}, 128<<10) // 1 MiB

// BenchmarkReadBlob reads one 1 MiB blob through the adapter and through
// the SDK's own AddResource, whose handler returns the same bytes.
func BenchmarkReadBlob(b *testing.B) {
	const uri = "bench://blob"
	read := func(b *testing.B, cs *mcp.ClientSession) {
		ctx := context.Background()
		params := &mcp.ReadResourceParams{URI: uri}
		if res, err := cs.ReadResource(ctx, params); err != nil || !bytes.Equal(res.Contents[0].Blob, benchBlob) {
			b.Fatalf("%v", err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(benchBlob)))
		b.ResetTimer()
		cpu := benchutil.CPU(b)
		for b.Loop() {
			if _, err := cs.ReadResource(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
		cpu()
	}
	b.Run("sdk", func(b *testing.B) {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
		s.AddResource(&mcp.Resource{URI: uri, Name: "blob", MIMEType: "application/octet-stream"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: benchBlob}}}, nil
			})
		read(b, benchClient(b, s))
	})
	b.Run("adapter", func(b *testing.B) {
		bind := selfBinding(core.ResourceDefinition{URI: uri, Name: "blob", MIMEType: "application/octet-stream"})
		bind.Reader = core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
			return core.BlobPayload("application/octet-stream", benchBlob), nil
		})
		r, err := core.NewResources([]core.ResourceBinding{bind}, storetest.AllowAll())
		if err != nil {
			b.Fatal(err)
		}
		s, _ := adapted(&mcp.Implementation{Name: "bench", Version: "v1"}, nil, r, nil)
		read(b, benchClient(b, s))
	})
}
