package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/connerr"
	"go.phpboyscout.uk/mcp/resources/migrations"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// storageFlags say where the reference schema's rows and the objects they
// reference live. The environment variables are the command's own: the
// integration suite's MCPRES_POSTGRES_URL and MCPRES_S3_* describe test
// servers, and a shell that exports them must not switch the command away
// from its embedded demo.
type storageFlags struct {
	Postgres string `name:"postgres" placeholder:"URL" env:"MCPRES_DATABASE_URL" group:"Storage" help:"PostgreSQL URL of the reference schema (postgres://user:pass@host:5432/db). Without it, the embedded demo. For serve the URL's role must be a superuser or an inheriting member of mcpres_reader (GRANT mcpres_reader TO it); for migrate it must be able to create schemas and, once per cluster, roles; for seed, write the mcpres tables."`
	Bucket   string `name:"bucket" env:"MCPRES_BUCKET" group:"Storage" help:"S3 bucket of the objects that asset rows reference. Needs --postgres."`
	Endpoint string `name:"bucket-endpoint" placeholder:"URL" env:"MCPRES_BUCKET_ENDPOINT" group:"Storage" help:"Base URL of an S3-compatible server (http://minio:9000); empty means AWS S3."`
	Region   string `name:"bucket-region" env:"MCPRES_BUCKET_REGION" group:"Storage" help:"Signing region (default us-east-1 with --bucket-endpoint, else the AWS default chain's)."`
	Access   string `name:"bucket-access-key" env:"MCPRES_BUCKET_ACCESS_KEY" group:"Storage" help:"Static access key id; without it the AWS default credential chain."`
	Secret   string `name:"bucket-secret-key" env:"MCPRES_BUCKET_SECRET_KEY" group:"Storage" help:"Secret of --bucket-access-key (prefer the environment variable)."`
	Path     bool   `name:"bucket-path-style" env:"MCPRES_BUCKET_PATH_STYLE" group:"Storage" help:"Address the bucket as ENDPOINT/BUCKET/KEY (MinIO, versitygw and most S3-compatible servers need it)."`

	// standby are serve's --postgres-standby and --standby-max-lag
	// (standby.go), which serve copies here; not flags of their own.
	standby standbyFlags
}

// connectTimeout bounds each start-up check of a dependency.
const connectTimeout = 10 * time.Second

// checkCombination refuses settings that cannot mean anything.
func (f *storageFlags) checkCombination() error {
	s3Set := f.Endpoint != "" || f.Region != "" || f.Access != "" || f.Secret != "" || f.Path
	switch {
	case s3Set && f.Bucket == "":
		return errors.New("the --bucket-* settings need --bucket (MCPRES_BUCKET): which bucket do the asset rows reference?")
	case f.Bucket != "" && f.Postgres == "":
		return errors.New("--bucket needs --postgres (MCPRES_DATABASE_URL): objects are served through the asset rows that reference them")
	case (f.Access == "") != (f.Secret == ""):
		return errors.New("give both --bucket-access-key and --bucket-secret-key, or neither (the AWS default chain)")
	}
	return nil
}

// openPool opens a pool on the --postgres URL and checks that the server
// answers and holds the reference schema.
func (f *storageFlags) openPool(ctx context.Context) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(f.Postgres)
	if err != nil {
		return nil, fmt.Errorf("--postgres is not a valid PostgreSQL URL: %w", connerr.Innermost(err))
	}
	if tp := tracerProvider(); tp != nil {
		cfg.ConnConfig.Tracer = postgres.NewTracer(tp) // tracing.go
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("--postgres: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s:%d: %s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, connerr.Cause(err, connectTimeout))
	}
	return pool, nil
}

// checkSchema makes sure the reference schema exists and the pool's login
// may read it as the reader role.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, reader bool) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var schema, role, super, keys bool
	err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = 'mcpres' AND tablename = 'assets'),
		EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1),
		coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false), `+keyNotifications,
		migrations.ReaderRole).Scan(&schema, &role, &super, &keys)
	if err != nil {
		return fmt.Errorf("checking the reference schema: %w", connerr.Innermost(err))
	}
	if !schema || !role {
		return errors.New("the database has no reference schema: run `mcp-resources migrate` first")
	}
	if !keys && reader {
		return errNoKeyNotifications
	}
	if !reader || super {
		return nil
	}
	var member bool
	if err := pool.QueryRow(ctx, `SELECT pg_has_role(current_user, $1, 'USAGE')`, migrations.ReaderRole).Scan(&member); err != nil {
		return fmt.Errorf("checking the login role: %w", connerr.Innermost(err))
	}
	if !member {
		return fmt.Errorf("the --postgres role is neither a superuser nor an inheriting member of %s: GRANT %s TO it", migrations.ReaderRole, migrations.ReaderRole)
	}
	return nil
}

// errNoBucket says the bucket does not exist.
var errNoBucket = errors.New("does not exist")

// headBucket asks S3 whether bucket exists and the credentials may use it.
func headBucket(ctx context.Context, client *s3.Client, bucket string) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		return nil
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotFound:
			return fmt.Errorf("bucket %s %w", bucket, errNoBucket)
		case http.StatusForbidden:
			return fmt.Errorf("bucket %s: access denied to these credentials", bucket)
		case http.StatusMovedPermanently, http.StatusBadRequest:
			return fmt.Errorf("bucket %s: S3 answered %d (wrong --bucket-region, or --bucket-path-style needed?)", bucket, re.HTTPStatusCode())
		}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return fmt.Errorf("bucket %s: S3 answered %s", bucket, ae.ErrorCode())
	}
	return fmt.Errorf("cannot reach S3 for bucket %s: %w", bucket, connerr.Innermost(err))
}

// storageBackend serves the reference schema from PostgreSQL, joined with
// the bucket's objects when --bucket is set, under the grants table's
// policy, through the reference schema's resources file embedded in the
// binary (migrations.ResourcesFile): the one code path of every resources
// file. Subscriptions learn of changes from one dedicated LISTEN
// connection to listenURL, or to the --postgres server when it is empty.
//
// It sends no request: the file's one start-up check per source runs
// when serve starts it (backend.check), beside checkSchema on the same
// pool, and a failure at a key that holds a flag's value is told in the
// flag's terms (the server cannot be reached, the bucket does not exist):
// see flagOfKey.
func (f *storageFlags) storageBackend(ctx context.Context, e *env, listenURL string, flags core.ResourceLimits) (*backend, error) {
	if _, err := pgxpool.ParseConfig(f.Postgres); err != nil {
		return nil, fmt.Errorf("--postgres is not a valid PostgreSQL URL: %w", connerr.Innermost(err))
	}
	if listenURL != "" {
		if _, err := pgx.ParseConfig(listenURL); err != nil {
			return nil, errors.New("--listen-postgres is not a valid PostgreSQL URL")
		}
	}
	file, err := f.referenceFile(listenURL)
	if err != nil {
		return nil, err
	}
	be, err := servedBackend(ctx, e, file, flags)
	if err != nil {
		return nil, err
	}
	check, pool := be.check, (*pgxpool.Pool)(nil)
	for _, st := range be.stores {
		if st.name == "postgres" { // the reference file's PostgreSQL source
			pool = st.Pool
		}
	}
	be.check = func(ctx context.Context) error {
		// The schema's own check runs beside the file's: it sees what the
		// file's statements cannot (migration 3's key notifications, which
		// subscriptions need), and why they fail when they do.
		schema := make(chan error, 1)
		go func() { schema <- checkSchema(ctx, pool, true) }()
		err, serr := check(ctx), <-schema
		switch ce := (*config.Error)(nil); {
		case !errors.As(err, &ce):
			return cmp.Or(err, serr)
		case flagOfKey[ce.Key] != "":
			return flagError(err)
		case serr != nil:
			return serr // the usual causes: no reference schema, a login without the reader role
		default:
			return fmt.Errorf("--postgres: the reference schema does not check: %s", ce.Reason)
		}
	}
	// Listing the reference file's definitions asks no database: its
	// policy discovers every definition to a valid principal.
	be.listFree = true
	be.name = "postgres"
	if f.Bucket != "" {
		be.name = "postgres+s3"
	} else {
		be.notes = append(be.notes, "no --bucket: asset rows are served without the objects they reference")
	}
	return be, nil
}

// keyNotifications is whether the schema has its key notifications (SQL).
const keyNotifications = `EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
	WHERE n.nspname = 'mcpres' AND p.proname = 'notify_keys')`

var errNoKeyNotifications = errors.New("the reference schema predates its key notifications (migration 3), which subscriptions need: run `mcp-resources migrate`")

// flagOfKey is the flag whose value each key of the reference file holds
// (config.Error.Key): a mistake there is the flag's.
var flagOfKey = map[string]string{
	"sources.postgres.postgres.url":        "--postgres",
	"sources.postgres.postgres.listen_url": "--listen-postgres",
	"sources.s3.s3.bucket":                 "--bucket",
	"sources.s3.s3.endpoint":               "--bucket-endpoint",
	"sources.s3.s3.region":                 "--bucket-region",
	"sources.s3.s3.access_key":             "--bucket-access-key",
	"sources.s3.s3.secret_key":             "--bucket-secret-key",
}

// flagError tells a mistake of the reference file at a flag's value in
// the flag's terms, "--FLAG: reason"; any other error is returned as is.
func flagError(err error) error {
	if ce := (*config.Error)(nil); errors.As(err, &ce) {
		if flag, ok := flagOfKey[ce.Key]; ok {
			return fmt.Errorf("%s: %s", flag, ce.Reason)
		}
	}
	return err
}

// referenceFile is the embedded reference schema's resources file with the
// flags' values for its ${MCPRES_...} references. Without --bucket its S3
// source, which is optional, is left out, with the resources that serve
// objects alone and the object items of the others.
func (f *storageFlags) referenceFile(listenURL string) (*config.File, error) {
	env := map[string]string{
		"MCPRES_DATABASE_URL": f.Postgres, "MCPRES_LISTEN_DATABASE_URL": listenURL,
		"MCPRES_BUCKET": f.Bucket, "MCPRES_BUCKET_ENDPOINT": f.Endpoint, "MCPRES_BUCKET_REGION": f.Region,
		"MCPRES_BUCKET_ACCESS_KEY": f.Access, "MCPRES_BUCKET_SECRET_KEY": f.Secret,
	}
	file, err := config.Parse(migrations.ResourcesFileName+" (built in)", migrations.ResourcesFile, &config.Options{
		LookupEnv: func(name string) (string, bool) { v, ok := env[name]; return v, ok }})
	if err != nil {
		return nil, fmt.Errorf("the built-in reference file: %w", err)
	}
	for i := range file.Sources {
		if s3 := file.Sources[i].S3; s3 != nil {
			s3.PathStyle = f.Path
		}
	}
	if err := f.standby.apply(file); err != nil {
		return nil, err
	}
	return file, nil
}
