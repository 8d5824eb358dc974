package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
)

// checkCmd checks a resources file against its servers without serving it.
type checkCmd struct {
	Config string `name:"config" required:"" placeholder:"FILE" env:"MCPRES_CONFIG" help:"The resources file to check (see config/schema.json)."`
}

// Run loads the file, connects to every source, prepares every statement,
// checks the roles and the templates, and prints one line per definition
// it would serve: URI or template, resource, source, what a read returns
// and what decides who reads it (as the proof that each database enforces
// access found it: postgres Source.Check); then every exemption from that
// proof, one line each with its reason; then the file's revision (config
// File.Revision: it changes with any statement, grant, policy or limit)
// and the listing's (core Resources.Revision: the definitions alone). The first mistake is one FILE:LINE:COL: line and exit 1.
func (c *checkCmd) Run(ctx context.Context, e *env) error {
	f, served, res, err := openConfig(ctx, c.Config)
	if err != nil {
		return err
	}
	defer served.Close()
	if err := checkOAuth(ctx, f, e); err != nil { // oauth.go
		return err
	}

	for _, l := range served.Lines {
		fmt.Fprintln(e.stdout, l)
	}
	for _, l := range served.Exemptions {
		fmt.Fprintln(e.stdout, l)
	}
	fmt.Fprintf(e.stdout, "%s: %d definitions, revision %s (listing %s)\n", c.Config, len(served.Bindings), served.Revision, res.Revision())
	return nil
}

// openConfig loads, opens and checks a resources file, and registers its
// bindings with a throwaway core.Resources under the file's limits, so
// that what serve would refuse, check refuses too (the overlap of two
// templates is refused by config.Load already, at the second one).
func openConfig(ctx context.Context, path string) (*config.File, *config.Served, *core.Resources, error) {
	f, err := config.Load(path, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	served, err := f.Open(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	opts := append([]core.Option{core.WithResourceLimits(f.ResourceLimits())}, served.ObjectSources()...)
	res, err := core.NewResources(served.CoreBindings(), served.Policy, opts...)
	if err != nil {
		served.Close()
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, served, res, nil
}

// configBackend serves the resources file of --config.
func (s *serveCmd) configBackend(ctx context.Context, e *env) (*backend, error) {
	if s.Storage.Postgres != "" || s.Storage.Bucket != "" {
		return nil, errors.New("give --config or --postgres and --bucket, not both: the file names its sources")
	}
	f, err := config.Load(s.Config, nil)
	if err != nil {
		return nil, err
	}
	be, err := servedBackend(ctx, e, f, s.Limits.limits())
	if err != nil {
		return nil, err
	}
	be.name = "config " + s.Config
	return be, nil
}

// servedBackend opens f's sources and serves its bindings: the one code
// path of a resources file and of the reference schema (whose file is
// embedded; see storageBackend). It sends no request: the file's start-up
// checks are the backend's check, which serve runs (see startChecks).
// flags are the limit flags, laid over the file's (boundPlans).
func servedBackend(ctx context.Context, e *env, f *config.File, flags core.ResourceLimits) (*backend, error) {
	boundPlans(f, flags)
	grants := newUnusableGrants(e.log.With("component", "grants")) // grantwarn.go
	served, err := f.Open(ctx, &config.OpenOptions{Logger: e.log.With("component", "listener"), TracerProvider: tracerProvider(),
		Deferred: true, UnusableGrantRows: grants.seen})
	if err != nil {
		return nil, err
	}
	be := &backend{bindings: served.CoreBindings(), policy: served.Policy, close: served.Close, sources: served.Changes, file: f, objects: served.Objects, check: served.Check, serving: served.Serving(),
		// A binding's reader reads only its own source's targets: the
		// gateway routes object items to the object source's reader, which
		// metrics.objectSources times under that source's name.
		storeOf: func(i int) string { return served.Bindings[i].Source }, grants: grants, decidedBy: served.DecidedBy}
	var names []string // the sources, in file order
	for _, r := range served.Ready {
		be.stores = append(be.stores, sourceReady{name: r.Source, Ready: r})
		names = append(names, r.Source)
	}
	if l := f.ResourceLimits(); l != (core.ResourceLimits{}) {
		be.limits = &l
	}
	be.notes = append(be.notes, fmt.Sprintf("serving the resources file %s: %d definitions from the sources %s",
		f.Name, len(served.Bindings), strings.Join(names, ",")))
	return be, nil
}

// boundPlans lays the plan and URI limits of the flags into f's, which
// its stores cut listings and bundles at: a plan cut by a flag's limit is
// then reported partial, as one cut by the file's is, rather than refused
// by the gateway as a plan over its limit.
func boundPlans(f *config.File, flags core.ResourceLimits) {
	if flags.MaxPlanItems == 0 && flags.MaxURIBytes == 0 {
		return
	}
	if f.Limits == nil {
		f.Limits = &config.Limits{}
	}
	f.Limits.MaxPlanItems = cmp.Or(flags.MaxPlanItems, f.Limits.MaxPlanItems)
	f.Limits.MaxURIBytes = cmp.Or(flags.MaxURIBytes, f.Limits.MaxURIBytes)
}

// fileLimits lays the flags' limits over the file's: a flag that is set
// wins, one left at zero keeps the file's value.
func fileLimits(file *core.ResourceLimits, flags core.ResourceLimits) core.ResourceLimits {
	if file == nil {
		return flags
	}
	out := *file
	dst, src := reflect.ValueOf(&out).Elem(), reflect.ValueOf(flags)
	for i := range src.NumField() { // every field of core.ResourceLimits, exported, zero for unset
		if !src.Field(i).IsZero() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	return out
}
