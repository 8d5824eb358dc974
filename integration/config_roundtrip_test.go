package integration

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tripKind is one kind of read whose PostgreSQL round trips are counted.
type tripKind struct {
	name, uri string
	items     int // the contents a read returns
}

// leastTrips reads each kind twice to warm the pool's connections and
// their statement caches, then returns, per kind, the least number of
// round trips proxy saw over three reads (a read that lands on a
// connection that has not prepared its statements yet pays for that).
func leastTrips(t *testing.T, proxy *tripProxy, cs *mcp.ClientSession, kinds []tripKind) map[string]int64 {
	t.Helper()
	read := func(k tripKind) {
		t.Helper()
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: k.uri})
		if err != nil || len(res.Contents) != k.items {
			n := -1
			if res != nil {
				n = len(res.Contents)
			}
			t.Fatalf("read %s: %v (%d contents, want %d)", k.uri, err, n, k.items)
		}
		for _, c := range res.Contents {
			if strings.HasPrefix(c.URI, "mcp-warning:") {
				t.Fatalf("read %s: partial, %s", k.uri, c.Text)
			}
		}
	}
	for _, k := range kinds {
		read(k)
		read(k)
	}
	trips := map[string]int64{}
	for _, k := range kinds {
		least := int64(-1)
		for range 3 {
			before := proxy.trips.Load()
			read(k)
			if n := proxy.trips.Load() - before; least < 0 || n < least {
				least = n
			}
		}
		trips[k.name] = least
	}
	return trips
}

// proxiedURL is dbURL with its host replaced by proxy's address.
func proxiedURL(t *testing.T, dbURL string) (*tripProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTripProxy(t, u.Host)
	p := *u
	p.Host = proxy.ln.Addr().String()
	return proxy, p.String()
}

// TestConfigRoundTripsPerReadMatchTheReference counts, through the built
// binary with its pool behind a counting proxy, the PostgreSQL round trips
// of one read of each kind: a row's body then its object (a document with
// its file; the joined asset), a row's body alone (a document without a
// file; an asset body) and a bundle of six items (a tenant's documents; the
// handbook project). Four servers are measured: the reference server over
// the seed data (serve --postgres, which serves the embedded reference
// file), the reference schema's shipped resources file over the same data
// (serve --config), the documents example's file, and that file with
// policy: database. It proves that the reference server costs at most 2
// per read of a body, of fields and an object, and of a bundle of any N;
// that the shipped reference file costs exactly what the reference server
// does; that the documents file costs one more (its decide statement uses
// $captures, which a body reader is not given, so its recheck after the
// reads is a statement of its own instead of being folded into the bodies
// statement); and that its policy: database costs one less than that (no
// recheck statement).
func TestConfigRoundTripsPerReadMatchTheReference(t *testing.T) {
	// The reference server over the seed data, as TestServerRoundTripsPerRead runs it.
	dbURL, s3env, flags := migratedAndSeeded(t)
	refProxy, refURL := proxiedURL(t, dbURL)
	args := []string{"--listen-postgres=" + dbURL, "--tokens=" + tokensFile(t, "alice")}
	for _, f := range flags {
		if strings.HasPrefix(f, "--postgres=") {
			f = "--postgres=" + refURL
		}
		args = append(args, f)
	}
	ref := leastTrips(t, refProxy, startServer(t, args...).connect(t, "alice-token"), []tripKind{
		{"body and object", "asset://project/handbook/asset/architecture", 2},
		{"body alone", "asset://project/handbook/asset/welcome/body", 1},
		{"bundle of 6", "asset://project/handbook", 6},
	})

	// The same data served from the reference schema's resources file.
	// The server binary is never given MCPRES_ variables (serverEnv), so
	// a copy of the file reads them as REF_ variables.
	shipped, err := os.ReadFile("../migrations/resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	refConfig := filepath.Join(t.TempDir(), "reference.yaml")
	if err := os.WriteFile(refConfig, []byte(strings.ReplaceAll(string(shipped), "${MCPRES_", "${REF_")), 0o600); err != nil {
		t.Fatal(err)
	}
	refCfgProxy, refCfgURL := proxiedURL(t, dbURL)
	for k, v := range map[string]string{"DATABASE_URL": refCfgURL, "LISTEN_DATABASE_URL": dbURL, "BUCKET": s3env.Bucket,
		"BUCKET_ENDPOINT": s3env.Endpoint, "BUCKET_REGION": s3env.Region, "BUCKET_ACCESS_KEY": s3env.AccessKey, "BUCKET_SECRET_KEY": s3env.SecretKey} {
		t.Setenv("REF_"+k, v)
	}
	refCfg := leastTrips(t, refCfgProxy, startServer(t, "--config", refConfig, "--tokens", tokensFile(t, "alice")).connect(t, "alice-token"), []tripKind{
		{"body and object", "asset://project/handbook/asset/architecture", 2},
		{"body alone", "asset://project/handbook/asset/welcome/body", 1},
		{"bundle of 6", "asset://project/handbook", 6},
	})

	// The documents example's file, its database behind the proxy.
	r := newDocsRig(t)
	withFile := r.document(t, "acme", "Plan", "the plan", "tenants/acme/files/plan.md", "text/markdown", []byte("# the file"))
	bodyOnly := r.document(t, "acme", "Notes", "the notes", "", "", nil)
	for i := range 4 {
		r.document(t, "acme", fmt.Sprintf("Doc %d", i), fmt.Sprintf("body %d", i), "", "", nil)
	}
	cfgProxy, cfgURL := proxiedURL(t, r.url)
	t.Setenv("DOCS_DATABASE_URL", cfgURL)
	t.Setenv("DOCS_BUCKET", r.env.Bucket)
	t.Setenv("S3_ENDPOINT", r.env.Endpoint)
	t.Setenv("S3_ACCESS_KEY", r.env.AccessKey)
	t.Setenv("S3_SECRET_KEY", r.env.SecretKey)
	docKinds := []tripKind{
		{"body and object", docURI("acme", withFile), 2},
		{"body alone", docURI("acme", bodyOnly), 1},
		{"bundle of 6", "doc://tenants/acme/documents", 6},
	}
	cfg := leastTrips(t, cfgProxy, startServer(t, "--config", documentsConfig, "--tokens", tokensFile(t, "alice")).connect(t, "alice-token"), docKinds)

	// The same documents file with policy: database (and without the
	// reports, which only its decide statement gates): no decide statement.
	dbProxy, dbDocsURL := proxiedURL(t, r.url)
	t.Setenv("DOCS_DATABASE_URL", dbDocsURL)
	docs, err := os.ReadFile(documentsConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := string(docs)
	p, q, reports := strings.Index(text, "\npolicy:"), strings.Index(text, "\nresources:"), strings.Index(text, "\n  report:\n")
	if p < 0 || q < p || reports < q {
		t.Fatalf("the documents file no longer has a policy, then resources, then the report resource")
	}
	dbDecides := filepath.Join(t.TempDir(), "documents-database.yaml")
	if err := os.WriteFile(dbDecides, []byte(text[:p]+"\npolicy: database\n"+text[q:reports]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgDB := leastTrips(t, dbProxy, startServer(t, "--config", dbDecides, "--tokens", tokensFile(t, "alice")).connect(t, "alice-token"), docKinds)

	for _, k := range []struct {
		name  string
		limit int64 // the reference server's bound for the kind: 2 for each (issue 37)
	}{{"body and object", 2}, {"body alone", 2}, {"bundle of 6", 2}} {
		t.Logf("%-16s documents file %d round trips (policy: database %d), reference file %d, reference server %d",
			k.name, cfg[k.name], cfgDB[k.name], refCfg[k.name], ref[k.name])
		if ref[k.name] > k.limit {
			t.Errorf("%s: the reference server's read costs %d round trips, want at most %d", k.name, ref[k.name], k.limit)
		}
		if refCfg[k.name] != ref[k.name] {
			t.Errorf("%s: the reference file's read costs %d round trips, the reference server's %d", k.name, refCfg[k.name], ref[k.name])
		}
		// The documents' decide statement binds $captures: its recheck is
		// a statement of its own, after the plan and the one statement of
		// the bodies (its plans inline nothing).
		if cfg[k.name] != 3 {
			t.Errorf("%s: the documents file's read costs %d round trips, want 3: the plan, the bodies and the recheck", k.name, cfg[k.name])
		}
		// Without a decide statement there is no recheck statement either.
		if cfgDB[k.name] != cfg[k.name]-1 {
			t.Errorf("%s: under policy: database the documents file's read costs %d round trips, want its %d less its recheck", k.name, cfgDB[k.name], cfg[k.name])
		}
	}
}
