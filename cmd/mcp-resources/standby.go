package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/internal/connerr"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// standbyFlags are serve's hot standbys of --postgres: the bodies of reads
// are served there, pinned to the version the primary planned, while
// plans, decisions, the recheck and LISTEN stay on --postgres.
type standbyFlags struct {
	URLs   []string      `name:"postgres-standby" placeholder:"URL" sep:"none" group:"Storage" help:"PostgreSQL URL of a hot standby of --postgres (repeatable): bodies of reads are served there, pinned to the version the primary planned (one the standby does not hold is read on --postgres); plans, decisions, the recheck and LISTEN stay on --postgres. A standby that lags more than --standby-max-lag, or is down, is skipped; /readyz does not depend on standbys. With --config, use the file's standbys key."`
	MaxLag time.Duration `name:"standby-max-lag" env:"MCPRES_STANDBY_MAX_LAG" group:"Storage" help:"Replay lag past which a --postgres-standby is not used until it catches up (0: 5s)."`
}

// withConfig refuses the standby flags beside --config, whose file says
// its standbys itself.
func (f standbyFlags) withConfig() error {
	if len(f.URLs) > 0 || f.MaxLag != 0 {
		return errors.New("--postgres-standby and --standby-max-lag go with --postgres; with --config, list them under the source's standbys and standby_max_lag")
	}
	return nil
}

// apply sets the standbys on the reference file's PostgreSQL source.
func (f standbyFlags) apply(file *config.File) error {
	if f.MaxLag < 0 {
		return errors.New("--standby-max-lag must not be negative")
	}
	for i, u := range f.URLs {
		if _, err := pgxpool.ParseConfig(u); err != nil {
			return fmt.Errorf("--postgres-standby %d is not a valid PostgreSQL URL: %w", i+1, connerr.Innermost(err))
		}
	}
	if len(f.URLs) == 0 {
		return nil
	}
	for i := range file.Sources {
		if p := file.Sources[i].Postgres; p != nil && file.Sources[i].Name == "postgres" {
			p.Standbys = make([]config.Secret, len(f.URLs))
			for k, u := range f.URLs {
				p.Standbys[k] = config.NewSecret(u)
			}
			p.StandbyMaxLag = config.Duration(f.MaxLag)
		}
	}
	return nil
}

// standbyMetrics registers the metrics of the standbys of the source
// name: each labelled by its position in the source's list (standby="0"),
// never by its URL.
func standbyMetrics(m *metrics, name string, stats func() postgres.StandbyStats) {
	st := stats()
	for _, sb := range st.Standbys {
		i := sb.Index
		labels := prometheus.Labels{"source": name, "standby": strconv.Itoa(i)}
		one := func(f func(postgres.StandbyStat) float64) func() float64 {
			return func() float64 {
				if l := stats().Standbys; i < len(l) {
					return f(l[i])
				}
				return 0
			}
		}
		m.funcMetric(true, "mcpres_standby_bodies_total", "Bodies a hot standby of the source served, by the standby's position in the source's list.", labels,
			one(func(s postgres.StandbyStat) float64 { return float64(s.Bodies) }))
		m.funcMetric(true, "mcpres_standby_body_bytes_total", "Bytes of the bodies a hot standby of the source served.", labels,
			one(func(s postgres.StandbyStat) float64 { return float64(s.Bytes) }))
		m.funcMetric(false, "mcpres_standby_lag_seconds", "The replay lag of a hot standby at its last probe: the time since the last transaction it replayed while it is behind the primary, 0 once it caught up, +Inf when it could not be measured.", labels,
			one(func(s postgres.StandbyStat) float64 {
				if s.Lag == math.MaxInt64 {
					return math.Inf(1)
				}
				return s.Lag.Seconds()
			}))
		m.funcMetric(false, "mcpres_standby_ready", "1 while a hot standby serves bodies, 0 while it lags past the bound, is down, was refused by the role check or is not probed yet.", labels,
			one(func(s postgres.StandbyStat) float64 {
				if s.State == "ready" {
					return 1
				}
				return 0
			}))
	}
	for _, reason := range postgres.FallbackReasons {
		m.funcMetric(true, "mcpres_standby_fallbacks_total", "Bodies meant for a hot standby that were read on the primary, by reason: missing (the standby had no row for the planned key), other_version (its row had another version), lagging (every standby lagged past the bound), down (none answered).",
			prometheus.Labels{"source": name, "reason": reason}, func() float64 { return float64(stats().Fallbacks[reason]) })
	}
	m.funcMetric(true, "mcpres_standby_primary_bodies_total", "Bodies of reads the primary served, on a source with hot standbys.", prometheus.Labels{"source": name},
		func() float64 { return float64(stats().PrimaryBodies) })
}
