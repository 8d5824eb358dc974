package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"go.phpboyscout.uk/mcp/resources/core"
)

// This file is how [Source.Check] prepares and runs its statements: in
// batches of checkBatch statements, each batch sent as three pipelines
// (every host statement prepared, then every statement the store sends
// prepared, then every one run once as the role), each statement its own
// implicit transaction ended by its own Sync, so that a batch is three
// round trips however many statements it holds, and a statement that
// fails leaves the others' results as they would be alone. A statement
// text met before in the same check (a generated file repeats a few
// shapes) is not sent again: the server's answer for it is the same.
// The first mistake in statement order is reported, as the check of one
// statement after another would report it.

// checkBatch bounds the statements of one batch, and so what one pipeline
// holds in flight.
const checkBatch = 128

// sequentialCheck makes Check prepare and run its statements one after
// another, a round trip each, for the benchmark that compares the two
// (export_test.go); nothing else sets it.
var sequentialCheck atomic.Bool

// errStalled is the cause of a check cut off because the database sent
// nothing for longer than the source's statement timeout.
var errStalled = errors.New("the database answered no statement of the check within the statement timeout")

// stallGuard returns ctx cancelled, with cause errStalled, once d passes
// without progress being called: the deadline of each statement of a
// check, however many there are, rather than one of the whole check. stop
// releases it.
func stallGuard(ctx context.Context, d time.Duration) (_ context.Context, progress, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(d, func() { cancel(fmt.Errorf("%w (%s)", errStalled, d)) })
	return ctx, func() { t.Reset(d) }, func() { t.Stop(); cancel(nil) }
}

// stalled returns err, which ended a check under ctx, saying so when
// the check's stall guard cut it off (a *core.ConfigError is kept as it
// is: it names the statement).
func stalled(ctx context.Context, source string, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(context.Cause(ctx), errStalled) || errors.Is(err, errStalled) {
		return err
	}
	if _, ok := errors.AsType[*core.ConfigError](err); ok {
		return err
	}
	return fmt.Errorf("postgres: source %s: %w: %w", source, context.Cause(ctx), err)
}

// hostAnswer is the server's answer to the preparation of one host
// statement text.
type hostAnswer struct {
	desc *pgconn.StatementDescription
	err  error
}

// sentAnswer is the server's answer to one statement text the store
// sends: its preparation (and its parameter count), then its run.
type sentAnswer struct {
	n         int
	prepErr   error
	probeErr  error
	probeDone bool
}

// checker is one check's statement answers, by text.
type checker struct {
	src      *Source
	conn     *pgx.Conn
	progress func()
	hosts    map[string]*hostAnswer
	sent     map[string]*sentAnswer
}

func (src *Source) newChecker(conn *pgx.Conn, progress func()) *checker {
	return &checker{src: src, conn: conn, progress: progress, hosts: map[string]*hostAnswer{}, sent: map[string]*sentAnswer{}}
}

// checkStatements checks stmts in order, as checkStatement does each,
// and returns their checked forms, or the first statement's mistake.
func (c *checker) checkStatements(ctx context.Context, stmts []*statement) ([]*prepared, error) {
	out := make([]*prepared, len(stmts))
	if sequentialCheck.Load() {
		for i, st := range stmts {
			p, err := c.src.checkStatement(ctx, c.conn, st)
			if err != nil {
				return nil, err
			}
			c.progress()
			out[i] = p
		}
		return out, nil
	}
	for at := 0; at < len(stmts); at += checkBatch {
		batch := stmts[at:min(at+checkBatch, len(stmts))]
		if err := c.checkBatch(ctx, batch, out[at:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkBatch checks batch, writing each statement's checked form to out.
func (c *checker) checkBatch(ctx context.Context, batch []*statement, out []*prepared) error {
	var hostSQL []string
	for _, st := range batch {
		if !st.derived && c.hosts[st.named.SQL] == nil {
			c.hosts[st.named.SQL] = &hostAnswer{}
			hostSQL = append(hostSQL, st.named.SQL)
		}
	}
	if err := c.prepareAll(ctx, hostSQL, func(sql string, desc *pgconn.StatementDescription, err error) {
		c.hosts[sql].desc, c.hosts[sql].err = desc, err
	}); err != nil {
		return err
	}
	mistakes := make([]error, len(batch))
	var sentSQL []string
	for i, st := range batch {
		var desc *pgconn.StatementDescription
		if !st.derived {
			h := c.hosts[st.named.SQL]
			if h.err != nil {
				mistakes[i] = st.configError("does not prepare: "+pgMessage(h.err), h.err)
				continue
			}
			desc = h.desc
		}
		p, err := st.prepare(desc)
		if err != nil {
			mistakes[i] = err
			continue
		}
		out[i] = p
		if c.sent[p.sql] == nil {
			c.sent[p.sql] = &sentAnswer{}
			sentSQL = append(sentSQL, p.sql)
		}
	}
	if err := c.prepareAll(ctx, sentSQL, func(sql string, desc *pgconn.StatementDescription, err error) {
		a := c.sent[sql]
		if a.prepErr = err; err == nil {
			a.n = len(desc.ParamOIDs)
		}
	}); err != nil {
		return err
	}
	if err := c.probeAll(ctx, sentSQL); err != nil {
		return err
	}
	for i, st := range batch {
		if mistakes[i] != nil {
			return mistakes[i]
		}
		a := c.sent[out[i].sql]
		if a.prepErr != nil {
			reason := out[i].sentReason
			if reason == "" {
				reason = "does not prepare as the store sends it"
			}
			return st.configError(reason+": "+pgMessage(a.prepErr), a.prepErr)
		}
		if a.probeErr != nil {
			role := c.src.s.role
			if role == "" {
				role = "the login role"
			}
			return st.configError(fmt.Sprintf("does not run as %s: %s", role, pgMessage(a.probeErr)), a.probeErr)
		}
	}
	return nil
}

// prepareAll prepares each of sqls (unnamed, each after its own Sync) in
// one pipeline, and tells answer what the server said of each. It returns
// an error only when the pipeline itself failed.
func (c *checker) prepareAll(ctx context.Context, sqls []string, answer func(sql string, desc *pgconn.StatementDescription, err error)) error {
	if len(sqls) == 0 {
		return nil
	}
	pl := c.conn.PgConn().StartPipeline(ctx)
	for _, sql := range sqls {
		pl.SendPrepare("", sql, nil)
		pl.SendPipelineSync()
	}
	err := pl.Flush()
	for _, sql := range sqls {
		if err != nil {
			break
		}
		var res any
		res, err = pl.GetResults()
		switch {
		case statementError(err) != nil:
			answer(sql, nil, err)
			err = nil
		case err == nil:
			desc, ok := res.(*pgconn.StatementDescription)
			if !ok {
				err = fmt.Errorf("a prepare answered %T", res)
				break
			}
			answer(sql, desc, nil)
		}
		if err == nil {
			err = c.sync(pl)
		}
	}
	return c.closePipeline(ctx, pl, err)
}

// probeAll runs each of sqls that prepared once, in one pipeline, as
// probe does: in a read-only implicit transaction of its own as the
// source's role, with every parameter NULL and no row fetched.
func (c *checker) probeAll(ctx context.Context, sqls []string) error {
	var run []string
	for _, sql := range sqls {
		if a := c.sent[sql]; a.prepErr == nil && !a.probeDone {
			run = append(run, sql)
		}
	}
	if len(run) == 0 {
		return nil
	}
	role := c.src.s.role
	setup, setupArgs := "SELECT set_config('transaction_read_only', 'on', true)", [][]byte(nil)
	if role != "" {
		setup, setupArgs = "SELECT set_config('role', $1, true), set_config('transaction_read_only', 'on', true)", [][]byte{[]byte(role)}
	}
	pl := c.conn.PgConn().StartPipeline(ctx)
	for _, sql := range run {
		pl.SendQueryParams(setup, setupArgs, nil, nil, nil)
		pl.SendQueryParams("SELECT 1 FROM ("+sql+"\n) AS probe LIMIT 0", make([][]byte, c.sent[sql].n), nil, nil, nil)
		pl.SendPipelineSync()
	}
	err := pl.Flush()
	for _, sql := range run {
		if err != nil {
			break
		}
		a := c.sent[sql]
		a.probeDone = true
		for step := range 2 {
			var res any
			if res, err = pl.GetResults(); err == nil {
				rr, ok := res.(*pgconn.ResultReader)
				if !ok {
					err = fmt.Errorf("a probe answered %T", res)
					break
				}
				_, err = rr.Close()
			}
			if pe := statementError(err); pe != nil {
				a.probeErr, err = err, nil
				if step == 0 {
					// The set-up failed, so the server skipped the probe,
					// which the pipeline cannot tell: it is given up.
					return c.closePipeline(ctx, pl, pe)
				}
				break
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = c.sync(pl)
		}
	}
	return c.closePipeline(ctx, pl, err)
}

// sync reads the end of one statement's implicit transaction.
func (c *checker) sync(pl *pgconn.Pipeline) error {
	res, err := pl.GetResults()
	if err != nil {
		return err
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("a pipeline answered %T where its Sync was due", res)
	}
	c.progress()
	return nil
}

// closePipeline closes pl and returns err, or the error of closing it,
// naming the source.
func (c *checker) closePipeline(_ context.Context, pl *pgconn.Pipeline, err error) error {
	if cerr := pl.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres: source %s: check: %w", c.src.name, err)
}
