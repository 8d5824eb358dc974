package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// The proof that storage enforces access (issue 45, items 1-3): each
// mistake an operator makes in the database, not in the file, is refused
// by Source.Check and by mcp-resources check in one line naming the table,
// view, function or grant, and the help desk itself still checks.

const (
	deskPlan  = "SELECT t.org || '/' || t.id AS key, 1 AS version, 'text/plain' AS mime\n      FROM tickets t WHERE t.org = $org AND t.id::text = $id\n"
	deskBody  = "SELECT t.subject AS body, 1 AS version FROM tickets t WHERE t.org || '/' || t.id = $key\n"
	deskGrant = "SELECT a.s3_key AS key FROM attachments a WHERE a.org = $org AND a.s3_key = $key\n"
	// orgsPlan joins the orgs table, which has no row-level security.
	orgsPlan = "SELECT t.org || '/' || t.id AS key, 1 AS version, 'text/plain' AS mime\n      FROM tickets t JOIN orgs o ON o.id = t.org WHERE t.org = $org AND t.id::text = $id\n"
)

// proofMistake is one mistake in the help desk's database or statements.
type proofMistake struct {
	name             string
	sql              string // run on the desk's database first
	plan, body, keys string // replace the ticket's plan, its body, the attachments' grant
	key              string // the file's key the line names
	want             []string
}

var proofMistakes = []proofMistake{
	{name: "the reader role owns a table", sql: "ALTER TABLE tickets OWNER TO desk_reader", key: "resources.ticket.plan",
		want: []string{"public.tickets", "role desk_reader owns", "FORCE ROW LEVEL SECURITY"}},
	{name: "a table without row-level security", plan: orgsPlan, key: "resources.ticket.plan",
		want: []string{"public.orgs", "row-level security disabled", "ENABLE ROW LEVEL SECURITY"}},
	{name: "a grant that does not depend on the caller", keys: "SELECT $key AS key\n", key: "resources.attachment.grant.keys",
		want: []string{"cannot depend on the caller", "public: true"}},
	{name: "a prefix built only from captures", keys: "SELECT 'orgs/' || $org || '/' AS prefix\n", key: "resources.attachment.grant.keys",
		want: []string{"cannot depend on the caller"}},
	{name: "a view that runs as its owner",
		sql:  "CREATE VIEW open_tickets AS SELECT * FROM tickets WHERE NOT internal; GRANT SELECT ON open_tickets TO desk_reader",
		plan: strings.Replace(deskPlan, "FROM tickets t", "FROM open_tickets t", 1), key: "resources.ticket.plan",
		want: []string{"view public.open_tickets", "runs as its owner", "security_invoker"}},
	{name: "a body that calls a SECURITY DEFINER function",
		sql: "CREATE FUNCTION ticket_subject(k text) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER " +
			"BEGIN ATOMIC SELECT subject FROM tickets WHERE org || '/' || id = k; END",
		body: "SELECT ticket_subject($key) AS body, 1 AS version FROM tickets t WHERE t.org || '/' || t.id = $key\n", key: "resources.ticket.body",
		want: []string{"function public.ticket_subject", "SECURITY DEFINER"}},
	{name: "a body that calls a PL/pgSQL function",
		sql: "CREATE FUNCTION ticket_subject(k text) RETURNS text LANGUAGE plpgsql STABLE " +
			"AS $$ BEGIN RETURN (SELECT subject FROM tickets WHERE org || '/' || id = k); END $$",
		body: "SELECT ticket_subject($key) AS body, 1 AS version FROM tickets t WHERE t.org || '/' || t.id = $key\n", key: "resources.ticket.body",
		want: []string{"function public.ticket_subject", "LANGUAGE plpgsql", "BEGIN ATOMIC"}},
	{name: "a table with row-level security and no policy for the role", sql: "DROP POLICY agent_tickets ON tickets", key: "resources.ticket.plan",
		want: []string{"public.tickets", "no SELECT policy for role desk_reader"}},
	{name: "a policy that lets every caller through",
		sql: "DROP POLICY agent_tickets ON tickets; CREATE POLICY everyone ON tickets FOR SELECT TO desk_reader USING (true)", key: "resources.ticket.plan",
		want: []string{"cannot depend on the caller", "public: true"}},
	{name: "a security_invoker view over a table without row-level security",
		sql:  "CREATE VIEW org_tickets WITH (security_invoker = true) AS SELECT t.* FROM tickets t JOIN orgs o ON o.id = t.org; GRANT SELECT ON org_tickets TO desk_reader",
		plan: strings.Replace(deskPlan, "FROM tickets t", "FROM org_tickets t", 1), key: "resources.ticket.plan",
		want: []string{"reads table public.orgs", "row-level security disabled"}},
	{name: "an invoker SQL function that reads a table without row-level security",
		sql:  "CREATE FUNCTION org_of(k text) RETURNS text LANGUAGE sql STABLE BEGIN ATOMIC SELECT o.id FROM orgs o WHERE o.id = split_part(k, '/', 1); END",
		body: "SELECT t.subject AS body, 1 AS version FROM tickets t WHERE t.org = org_of($key) AND t.org || '/' || t.id = $key\n", key: "resources.ticket.body",
		want: []string{"reads table public.orgs", "row-level security disabled"}},
	{name: "a policy for another role", sql: "DO $$ BEGIN CREATE ROLE desk_other NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$; ALTER POLICY agent_tickets ON tickets TO desk_other", key: "resources.ticket.plan",
		want: []string{"public.tickets", "no SELECT policy for role desk_reader"}},
}

// mistaken returns the help desk's file with m's statements.
func (m proofMistake) file() string {
	f := deskFile
	if m.plan != "" {
		f = strings.Replace(f, deskPlan, m.plan, 1)
	}
	if m.body != "" {
		f = strings.Replace(f, "    body: "+deskBody, "    body: "+m.body, 1)
	}
	if m.keys != "" {
		f = strings.Replace(f, "keys: "+deskGrant, "keys: "+m.keys, 1)
	}
	return f
}

// deskSource is the help desk's ticket binding and attachments grant on a
// Source of its own, checked.
func deskSource(t *testing.T, url, plan, body, keys string, exempt map[string]string) (*postgres.Source, error) {
	t.Helper()
	pool := newPool(t, url, nil)
	src, err := postgres.NewSource(pool, postgres.SourceOptions{Name: "desk", Role: "desk_reader", Exempt: exempt})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Binding(postgres.SQLBinding{Definition: core.ResourceDefinition{Name: "ticket", URITemplate: "ticket://t/{org}/{id}"},
		Plan: plan, Body: body}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.KeyGrant("attachment", keys, []string{"org", "k1"}); err != nil {
		t.Fatal(err)
	}
	return src, src.Check(t.Context())
}

func TestProofRefusesWhatTheDatabaseWouldNotEnforce(t *testing.T) {
	for _, m := range proofMistakes {
		t.Run(m.name, func(t *testing.T) {
			file := m.file()
			if file == deskFile && m.sql == "" {
				t.Fatal("the mistake changes nothing")
			}
			r := newDeskRig(t, file)
			if m.sql != "" {
				applySQL(t, r.admin, m.sql)
			}
			for _, cmd := range []string{"check", "serve"} {
				code, stdout, stderr := runServerCmd(t, "", cmd, "--config", r.file)
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				last := lines[len(lines)-1]
				if code != 1 || (cmd == "check" && len(lines) != 1) || !strings.HasPrefix(last, r.file+":") || !strings.Contains(last, ": "+m.key+": ") {
					t.Fatalf("%s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 and one line at %s", cmd, code, stdout, stderr, m.key)
				}
				for _, w := range m.want {
					if !strings.Contains(last, w) {
						t.Errorf("%s's line does not say %q: %s", cmd, w, last)
					}
				}
			}
			plan, body, keys := firstOf(m.plan, deskPlan), firstOf(m.body, deskBody), firstOf(m.keys, deskGrant)
			_, err := deskSource(t, r.url, plan, body, keys, nil)
			ce, ok := errors.AsType[*core.ConfigError](err)
			if !ok {
				t.Fatalf("Source.Check: %v, want a *core.ConfigError", err)
			}
			for _, w := range m.want {
				if !strings.Contains(ce.Error(), w) {
					t.Errorf("Source.Check's error does not say %q: %s", w, ce)
				}
			}
		})
	}
}

func firstOf(s, or string) string {
	if s != "" {
		return s
	}
	return or
}

// TestProofAnExemptionLetsATableThroughAndCheckPrintsIt: the orgs table,
// a lookup table without row-level security, is read once the file
// exempts it with a reason; check prints the exemption and says so on the
// resource that reads it. A name that is no table is refused.
func TestProofAnExemptionLetsATableThroughAndCheckPrintsIt(t *testing.T) {
	exempt := "      role: desk_reader\n      exempt:\n        public.orgs: the org ids, the same for every agent\n"
	file := strings.Replace(strings.Replace(deskFile, deskPlan, orgsPlan, 1), "      role: desk_reader\n", exempt, 1)
	r := newDeskRig(t, file)
	out := mustRun(t, "", "check", "--config", r.file)
	for _, want := range []string{
		"ticket://t/{org}/{id}\tticket\tdesk\titem\tplan and body statements' row-level security (exempt from the proof: public.orgs)\n",
		"exempt public.orgs on desk: the org ids, the same for every agent\n",
		"ticket://att/{org}/{k1}\tattachment\tfiles\ts3\tgrant statement on desk\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}
	if _, err := deskSource(t, r.url, orgsPlan, deskBody, deskGrant, map[string]string{"public.orgs": "lookup"}); err != nil {
		t.Errorf("Source.Check with the exemption: %v", err)
	}
	if _, err := deskSource(t, r.url, orgsPlan, deskBody, deskGrant, map[string]string{"public.orgz": "a typo"}); err == nil ||
		!strings.Contains(err.Error(), "public.orgz") {
		t.Errorf("Source.Check with an exemption of no table: %v, want a refusal naming it", err)
	}

	typo := strings.Replace(file, "public.orgs:", "public.orgz:", 1)
	r2 := newDeskRig(t, typo)
	code, _, stderr := runServerCmd(t, "", "check", "--config", r2.file)
	if code != 1 || !strings.Contains(stderr, "sources.desk.postgres.exempt.public.orgz: names public.orgz, which is no table") {
		t.Errorf("check with an exemption of no table: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestProofAPublicResourceMayAnswerAlikeForEveryCaller: a resource over
// the orgs table (exempt) answers alike for every caller; without
// public: true it is refused, with it check says it is public.
func TestProofAPublicResourceMayAnswerAlikeForEveryCaller(t *testing.T) {
	orgs := "  orgs:\n    uri: desk://orgs\n    source: desk\n" +
		"    plan: SELECT 'orgs' AS key, 1 AS version, 'text/plain' AS mime\n" +
		"    body: SELECT string_agg(o.id, ',' ORDER BY o.id) AS body, 1 AS version FROM orgs o HAVING $key = 'orgs'\n"
	exempt := "      role: desk_reader\n      exempt:\n        public.orgs: the org ids, the same for every agent\n"
	base := strings.Replace(deskFile, "      role: desk_reader\n", exempt, 1) + orgs
	r := newDeskRig(t, base)
	code, _, stderr := runServerCmd(t, "", "check", "--config", r.file)
	if code != 1 || !strings.Contains(stderr, "resources.orgs.plan: its answer cannot depend on the caller") {
		t.Errorf("check of a caller-free resource without public: exit %d, stderr:\n%s", code, stderr)
	}
	r2 := newDeskRig(t, base+"    public: true\n")
	out := mustRun(t, "", "check", "--config", r2.file)
	if want := "desk://orgs\torgs\tdesk\titem\tpublic: every token holder reads every item (exempt from the proof: public.orgs)\n"; !strings.Contains(out, want) {
		t.Errorf("check does not say %q:\n%s", want, out)
	}
}

// TestProofBrokenWhileServingStopsTheSourceUntilItHoldsAgain: once Prove
// finds row-level security disabled on a served table, every read of the
// source is a retryable storage outage and nothing is served; enabling it
// again and proving restores serving.
func TestProofBrokenWhileServingStopsTheSourceUntilItHoldsAgain(t *testing.T) {
	r := newDeskRig(t, deskFile)
	src, err := deskSource(t, r.url, deskPlan, deskBody, deskGrant, nil)
	if err != nil {
		t.Fatal(err)
	}
	var bindings []core.ResourceBinding
	b, err := src.Binding(postgres.SQLBinding{Definition: core.ResourceDefinition{Name: "ticket2", URITemplate: "ticket://u/{org}/{id}"},
		Plan: deskPlan, Body: deskBody})
	if err != nil {
		t.Fatal(err)
	}
	bindings = append(bindings, b)
	grant, err := src.KeyGrant("attachment2", deskGrant, []string{"org", "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := core.NewResources(bindings, postgres.DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "amy"})
	read := func() (*core.ResourceResult, error) { return res.Read(ctx, "ticket://u/acme/1") }
	if got, err := read(); err != nil || len(got.Items()) != 1 {
		t.Fatalf("read before: %+v, %v", got, err)
	}
	if err := src.Prove(t.Context()); err != nil {
		t.Fatalf("Prove of a sound source: %v", err)
	}

	applySQL(t, r.admin, "ALTER TABLE tickets DISABLE ROW LEVEL SECURITY")
	err = src.Prove(t.Context())
	if ce, ok := errors.AsType[*core.ConfigError](err); !ok || !strings.Contains(ce.Error(), "public.tickets") {
		t.Fatalf("Prove after DISABLE ROW LEVEL SECURITY: %v, want a *core.ConfigError naming public.tickets", err)
	}
	got, err := read()
	f, ok := errors.AsType[*core.Failure](err)
	if !ok || f.Kind != core.FailureOutage || !f.Retryable() || !errors.Is(err, postgres.ErrNotProven) {
		t.Fatalf("read while the proof is broken: %+v, %v, want a retryable storage outage", got, err)
	}
	if ok, err := grant(ctx, "attachment2", "orgs/acme/x", map[string]string{"org": "acme"}); ok || core.KindOf(err) != core.FailureOutage || !errors.Is(err, postgres.ErrNotProven) {
		t.Fatalf("grant while the proof is broken: %v, %v, want a storage outage", ok, err)
	}

	applySQL(t, r.admin, "ALTER TABLE tickets ENABLE ROW LEVEL SECURITY")
	if got, err := read(); err == nil {
		t.Fatalf("read before a new proof: %+v, want it still refused", got)
	}
	if err := src.Prove(t.Context()); err != nil {
		t.Fatalf("Prove after ENABLE ROW LEVEL SECURITY: %v", err)
	}
	if got, err := read(); err != nil || len(got.Items()) != 1 {
		t.Fatalf("read after: %+v, %v", got, err)
	}
}

// callerRLS is the SQL that puts tables under row-level security that lets
// every caller with a principal through: for tests about something else
// than access, so that the proof accepts their tables.
func callerRLS(tables ...string) string {
	var b strings.Builder
	for _, t := range tables {
		b.WriteString("ALTER TABLE " + t + " ENABLE ROW LEVEL SECURITY; CREATE POLICY callers ON " + t +
			" FOR SELECT USING (current_setting('mcp.principal', true) <> ''); ")
	}
	return b.String()
}

// TestProofAcceptsInvokerViewsAndSQLFunctionsOverSecuredTables: a view
// that runs as the caller and a LANGUAGE sql function with a BEGIN ATOMIC
// body are walked into, and what they read is under row-level security
// that depends on the caller, so the file checks.
func TestProofAcceptsInvokerViewsAndSQLFunctionsOverSecuredTables(t *testing.T) {
	plan := strings.Replace(deskPlan, "FROM tickets t", "FROM my_tickets t", 1)
	body := "SELECT subject_of($key) AS body, 1 AS version\n"
	file := strings.Replace(strings.Replace(deskFile, deskPlan, plan, 1), "    body: "+deskBody, "    body: "+body, 1)
	r := newDeskRig(t, file)
	applySQL(t, r.admin, `CREATE VIEW my_tickets WITH (security_invoker = true) AS SELECT * FROM tickets;
		GRANT SELECT ON my_tickets TO desk_reader;
		CREATE FUNCTION subject_of(k text) RETURNS text LANGUAGE sql STABLE
		BEGIN ATOMIC SELECT t.subject FROM tickets t WHERE t.org || '/' || t.id = k; END`)
	out := mustRun(t, "", "check", "--config", r.file)
	if want := "ticket://t/{org}/{id}\tticket\tdesk\titem\tplan and body statements' row-level security\n"; !strings.Contains(out, want) {
		t.Errorf("check does not say %q:\n%s", want, out)
	}
	if _, err := deskSource(t, r.url, plan, body, deskGrant, nil); err != nil {
		t.Errorf("Source.Check: %v", err)
	}
}

// TestProofSpansChunksOfViews: a source of more distinct statements than
// the proof makes views at once (it drops each chunk's before the next)
// is proved statement by statement: a mistake in the last chunk is
// refused naming its own binding and table, an exemption is found on
// bindings in every chunk, and the source checks once the mistake goes.
func TestProofSpansChunksOfViews(t *testing.T) {
	const n = 300 // 600 views: three chunks
	r := newDeskRig(t, deskFile)
	check := func(bad int) error {
		pool := newPool(t, r.url, nil)
		src, err := postgres.NewSource(pool, postgres.SourceOptions{Name: "desk", Role: "desk_reader",
			Exempt: map[string]string{"public.orgs": "the org ids, the same for every agent"}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			// Each binding's statements are distinct texts; every tenth
			// joins the exempt orgs table.
			plan := fmt.Sprintf("SELECT t.org || '/' || t.id AS key, %d AS version, 'text/plain' AS mime FROM tickets t WHERE t.org = $org AND t.id::text = $id", i)
			if i%10 == 0 {
				plan = fmt.Sprintf("SELECT t.org || '/' || t.id AS key, %d AS version, 'text/plain' AS mime FROM tickets t JOIN orgs o ON o.id = t.org WHERE t.org = $org AND t.id::text = $id", i)
			}
			body := fmt.Sprintf("SELECT t.subject AS body, %d AS version FROM tickets t WHERE t.org || '/' || t.id = $key", i)
			if i == bad {
				body = fmt.Sprintf("SELECT t.subject AS body, %d AS version FROM tickets t JOIN attachments_unsecured u ON u.org = t.org WHERE t.org || '/' || t.id = $key", i)
			}
			if _, err := src.Binding(postgres.SQLBinding{Definition: core.ResourceDefinition{Name: fmt.Sprintf("ticket-%d", i), URITemplate: fmt.Sprintf("ticket%d://t/{org}/{id}", i)},
				Plan: plan, Body: body}); err != nil {
				t.Fatal(err)
			}
		}
		if err := src.Check(t.Context()); err != nil {
			return err
		}
		for _, i := range []int{0, 130, 290, 1, 299} {
			p, ok := src.Proof(fmt.Sprintf("ticket-%d", i))
			if want := i%10 == 0; !ok || (len(p.Exempted) == 1) != want {
				t.Errorf("ticket-%d: proof %+v, %v; want public.orgs exempted: %v", i, p, ok, want)
			}
		}
		return nil
	}
	applySQL(t, r.admin, "CREATE TABLE attachments_unsecured (org text); GRANT SELECT ON attachments_unsecured TO desk_reader")
	err := check(n - 3)
	ce, ok := errors.AsType[*core.ConfigError](err)
	if !ok || !strings.Contains(ce.Error(), "ticket-297") || !strings.Contains(ce.Error(), "public.attachments_unsecured") {
		t.Fatalf("Source.Check: %v, want the mistake of ticket-297 in the last chunk", err)
	}
	if err := check(-1); err != nil {
		t.Fatalf("Source.Check without the mistake: %v", err)
	}
}

// TestProofDoesNotWaitForAnUnrelatedLockedTable: the proof walks the
// catalog from the statements' own relations, so a table the statements
// never read, whose SELECT policy the walk used to deparse (taking a lock
// on it), does not hold the proof while a migration holds that table.
func TestProofDoesNotWaitForAnUnrelatedLockedTable(t *testing.T) {
	t.Parallel()
	url, admin := newDocsDB(t)
	applySQL(t, admin, `CREATE TABLE unrelated (id text PRIMARY KEY, owner text NOT NULL);
		ALTER TABLE unrelated ENABLE ROW LEVEL SECURITY;
		CREATE POLICY unrelated_read ON unrelated FOR SELECT TO docs_reader USING (owner = current_setting('mcp.principal', true))`)
	src, err := postgres.NewSource(newPool(t, url, nil), postgres.SourceOptions{Name: "docs", Role: "docs_reader"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "doc://tenants/{tenant}/documents/{id}", Name: "document"},
		Plan: `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime
			FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`,
		Body: `SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key`,
	}); err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	lockTable(t, admin, "unrelated")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := src.Prove(ctx); err != nil {
		t.Fatalf("Prove while an unrelated table is locked: %v", err)
	}
}
