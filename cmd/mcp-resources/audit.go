package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/internal/connerr"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/audit"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// auditFlags are serve's audit trail (docs/audit.md): where events go and
// what a read does when they cannot.
type auditFlags struct {
	File      string        `name:"audit-file" placeholder:"PATH" env:"MCPRES_AUDIT_FILE" help:"Write one JSON line per request that touches resources to PATH (- for stdout), apart from the logs, rotated by size (docs/audit.md)."`
	FileBytes int64         `name:"audit-file-max-bytes" default:"67108864" env:"MCPRES_AUDIT_FILE_MAX_BYTES" help:"Rotate --audit-file past this size."`
	FileKeep  int           `name:"audit-file-keep" default:"5" env:"MCPRES_AUDIT_FILE_KEEP" help:"How many rotated --audit-file files to keep (PATH.1 ... PATH.N)."`
	Postgres  string        `name:"audit-postgres" placeholder:"URL" env:"MCPRES_AUDIT_DATABASE_URL" help:"Write audit events to the table mcpres.audit_events of this PostgreSQL database (migrations 4 and 5), in batches, as the role mcpres_auditor (INSERT only)."`
	OnFailure string        `name:"audit-on-failure" default:"refuse" enum:"refuse,continue" env:"MCPRES_AUDIT_ON_FAILURE" help:"refuse: serve nothing whose audit event was not written (a retryable storage outage); continue: serve, and count the dropped events in mcpres_audit_events_dropped_total."`
	Queue     int           `name:"audit-queue" default:"4096" env:"MCPRES_AUDIT_QUEUE" help:"Audit events waiting for the sink at most; one more is refused or dropped."`
	Batch     int           `name:"audit-batch" default:"256" env:"MCPRES_AUDIT_BATCH" help:"Audit events written in one batch at most."`
	Timeout   time.Duration `name:"audit-timeout" default:"2s" env:"MCPRES_AUDIT_TIMEOUT" help:"Bound of one audit write, and of a read's wait for its event under --audit-on-failure refuse."`
}

// withFile returns the flags with the resources file's audit section
// (nil: none) in force when no --audit-file or --audit-postgres is given:
// the section's values, and the flags' where it leaves a default.
func (f auditFlags) withFile(file *config.File) auditFlags {
	if f.File != "" || f.Postgres != "" || file == nil {
		return f
	}
	a := file.AuditSettings()
	if a == nil {
		return f
	}
	f.File, f.Postgres = a.File, a.PostgresURL
	f.OnFailure = cmp.Or(a.OnFailure, f.OnFailure)
	f.FileKeep = cmp.Or(a.KeepFiles, f.FileKeep)
	f.Queue = cmp.Or(a.Queue, f.Queue)
	f.Batch = cmp.Or(a.Batch, f.Batch)
	f.FileBytes = cmp.Or(a.MaxFileBytes, f.FileBytes)
	f.Timeout = cmp.Or(a.Timeout, f.Timeout)
	return f
}

// check refuses flags that cannot make a trail, before anything starts.
func (f auditFlags) check() error {
	if f.File != "" && f.Postgres != "" {
		return errors.New("--audit-file and --audit-postgres: choose one audit sink")
	}
	if _, err := audit.ParseMode(f.OnFailure); err != nil {
		return fmt.Errorf("--audit-on-failure: %w", err)
	}
	if f.Queue <= 0 || f.Batch <= 0 || f.Timeout <= 0 || f.FileBytes <= 0 || f.FileKeep <= 0 {
		return errors.New("--audit-queue, --audit-batch, --audit-timeout, --audit-file-max-bytes and --audit-file-keep must be positive")
	}
	if f.Postgres != "" {
		if _, err := pgxpool.ParseConfig(f.Postgres); err != nil {
			return errors.New("--audit-postgres: not a valid PostgreSQL URL") // the URL may hold a password
		}
	}
	return nil
}

// trail builds the audit trail the flags ask for (checked by check), or
// nil for none. Its counters go to m.
func (f auditFlags) trail(ctx context.Context, m *metrics, log *slog.Logger) (*audit.Trail, error) {
	if f.File == "" && f.Postgres == "" {
		return nil, nil
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	mode, _ := audit.ParseMode(f.OnFailure)
	var err error
	var sink audit.Sink
	if f.File != "" {
		if sink, err = audit.OpenJSONFile(f.File, audit.JSONFileOptions{MaxBytes: f.FileBytes, Keep: f.FileKeep}); err != nil {
			return nil, fmt.Errorf("--audit-file: %w", err)
		}
	} else {
		cfg, err := pgxpool.ParseConfig(f.Postgres)
		if err != nil {
			return nil, errors.New("--audit-postgres: not a valid PostgreSQL URL")
		}
		cfg.MaxConns = 2
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("--audit-postgres: %w", err)
		}
		pg, err := audit.NewPostgres(pool, audit.PostgresOptions{Table: migrations.AuditTable, Role: migrations.AuditorRole})
		if err != nil {
			pool.Close()
			return nil, err
		}
		checkCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		// A table the sink cannot write stops the start; a database out of
		// reach does not: the mode decides what its reads do meanwhile.
		if err := pg.Check(checkCtx); errors.Is(err, audit.ErrTable) {
			pool.Close()
			return nil, fmt.Errorf("--audit-postgres: %w", err)
		} else if err != nil {
			log.Warn("the audit database is out of reach at start", "cause", connerr.Cause(err, 10*time.Second))
		}
		sink = pg
	}
	t := audit.New(sink, audit.Options{Mode: mode, QueueSize: f.Queue, BatchSize: f.Batch, WriteTimeout: f.Timeout, Logger: log})
	m.funcMetric(true, "mcpres_audit_events_dropped_total", "Audit events dropped under --audit-on-failure continue: reads served unaudited.", nil,
		func() float64 { return float64(t.Dropped()) })
	m.funcMetric(true, "mcpres_audit_events_written_total", "Audit events the audit sink wrote.", nil,
		func() float64 { return float64(t.Written()) })
	return t, nil
}

// auditor is t as the adapter's option: nil for no trail.
func auditor(t *audit.Trail) mcpsdk.Auditor {
	if t == nil {
		return nil
	}
	return t
}

// closeTrail flushes t within grace (at least a second) once serving has
// ended; Close logs how many events were lost.
func closeTrail(t *audit.Trail, grace time.Duration) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(grace, time.Second))
	defer cancel()
	_, _ = t.Close(ctx)
}
