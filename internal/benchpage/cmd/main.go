// Command cmd runs the benchmarks of [benchpage.Entries] and writes
// BENCHMARKS.md from that one run; scripts/bench.sh builds what it needs
// (services, this commit's binary, the baseline's) and runs it:
//
//	go run ./internal/benchpage/cmd [--quick] [--only NAME,...] --baseline REV [--mem-baseline REV]
//	go run ./internal/benchpage/cmd --render    # the page again from docs/bench
//	go run ./internal/benchpage/cmd --list      # the entries and their commands
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/benchpage"
)

func main() {
	quick := flag.Bool("quick", false, "short runs, for trying the script out")
	baseline := flag.String("baseline", "", "the baseline commit, as the page names it")
	memBaseline := flag.String("mem-baseline", "", "the memory baseline commit (BENCH_MEM_BASE_BIN), as the page names it")
	out := flag.String("out", "docs/bench", "directory of the raw outputs, relative to the page")
	page := flag.String("page", "BENCHMARKS.md", "the page to write")
	only := flag.String("only", "", "run only these entries (comma-separated names)")
	render := flag.Bool("render", false, "write the page from the raw outputs of the last run, running nothing")
	list := flag.Bool("list", false, "print the entries and their commands")
	flag.Parse()
	mode := map[bool]string{true: "quick", false: "full"}[*quick]
	if *list {
		for _, e := range benchpage.Entries {
			fmt.Printf("%-15s %-12s %s\n", e.Name, e.Section, or(e.Command(mode), "("+e.Pending+")"))
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, mode, *baseline, *memBaseline, *out, *page, *only, *render); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func run(ctx context.Context, mode, baseline, memBaseline, out, page, only string, render bool) error {
	root, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	info := filepath.Join(out, "run.txt")
	var ri benchpage.RunInfo
	if render {
		f, err := os.Open(info)
		if err != nil {
			return err
		}
		ri, err = benchpage.ParseRunInfo(f)
		f.Close()
		if err != nil {
			return err
		}
	} else {
		var names []string
		if only != "" {
			names = strings.Split(only, ",")
			for _, n := range names {
				if !slices.ContainsFunc(benchpage.Entries, func(e benchpage.Entry) bool { return e.Name == n }) {
					return fmt.Errorf("--only: no entry %q (--list names them)", n)
				}
			}
		}
		ri = benchpage.RunInfo{Mode: mode, Baseline: baseline, MemBaseline: memBaseline, LoadBefore: benchpage.LoadAverage(), Started: now()}
		ri.Commit, err = git(ctx, "rev-parse", "--short", "HEAD")
		if err != nil {
			return err
		}
		// The page and the raw outputs are this run's outputs, not changes.
		st, err := git(ctx, "status", "--porcelain", "--", ".", ":!"+out, ":!"+page)
		if err != nil {
			return err
		}
		ri.Dirty = st != ""
		benchpage.Machine(ctx, &ri)
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		// The directory holds one run: drop the last one's outputs.
		old, _ := filepath.Glob(filepath.Join(out, "*.txt"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
		for _, e := range benchpage.Entries {
			if e.Pending != "" || names != nil && !slices.Contains(names, e.Name) {
				continue
			}
			if ctx.Err() != nil {
				break
			}
			ri.Outcomes = append(ri.Outcomes, benchpage.RunEntry(ctx, root, out, mode, e, os.Stderr))
		}
		ri.Finished, ri.LoadAfter = now(), benchpage.LoadAverage()
		f, err := os.Create(info)
		if err != nil {
			return err
		}
		if err := ri.Write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	text, statuses := benchpage.Page(ri, benchpage.Entries, out, filepath.ToSlash(out))
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		return err
	}
	for i, e := range benchpage.Entries {
		fmt.Fprintf(os.Stderr, "bench: %-15s %s\n", e.Name, statuses[i].Text)
	}
	if problems := benchpage.Lint(text); len(problems) > 0 {
		return fmt.Errorf("%s: %s", page, strings.Join(problems, "; "))
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s (%d lines) and %s\n", page, strings.Count(text, "\n"), out)
	return ctx.Err()
}

func now() string { return time.Now().UTC().Format("2006-01-02 15:04 UTC") }

func git(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", args...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
