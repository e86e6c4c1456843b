package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/coordinator"
	"github.com/agentorchestrator/orchestrator/store"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// A SQLite store has no Notifier: an untyped nil, so that cfg.Notifier = store.Notifier() leaves the
// coordinator without one.
func TestNotifierSQLite(t *testing.T) {
	t.Parallel()
	s := open(t, ":memory:")
	if n := s.Notifier(); n != nil {
		t.Fatalf("SQLite Notifier() = %#v, want nil", n)
	}
	var cfg coordinator.Config
	cfg.Notifier = s.Notifier()
	if cfg.Notifier != nil {
		t.Fatal("cfg.Notifier is a non-nil interface holding nil")
	}
}

// collector gathers delivered keys.
type collector struct {
	mu   sync.Mutex
	keys []string
	seen map[string]time.Time
	ch   chan struct{}
}

func newCollector() *collector {
	return &collector{seen: map[string]time.Time{}, ch: make(chan struct{}, 1)}
}

func (c *collector) deliver(key string) {
	c.mu.Lock()
	c.keys = append(c.keys, key)
	if _, ok := c.seen[key]; !ok {
		c.seen[key] = time.Now()
	}
	c.mu.Unlock()
	select {
	case c.ch <- struct{}{}:
	default:
	}
}

// waitFor waits until every key was delivered, or fails the test after timeout.
func (c *collector) waitFor(t *testing.T, keys []string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		missing := 0
		for _, k := range keys {
			if _, ok := c.seen[k]; !ok {
				missing++
			}
		}
		c.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-c.ch:
		case <-deadline:
			t.Fatalf("%d of %d keys not delivered within %s", missing, len(keys), timeout)
		}
	}
}

func (c *collector) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.seen[key]
	return ok
}

// listen runs n.Listen until the test ends and waits until it is in effect (the "" key).
func listen(t *testing.T, n store.Notifier) *collector {
	t.Helper()
	c := newCollector()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Listen(ctx, c.deliver) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Listen after cancel = %v, want context.Canceled", err)
		}
	})
	c.waitFor(t, []string{""}, 10*time.Second)
	return c
}

// Two stores (two coordinator replicas) on one schema: a key published through one reaches the other
// promptly, and not the publisher itself.
func TestNotifierAcrossStores(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	a, b := open(t, dsn), open(t, dsn)
	na, nb := a.Notifier(), b.Notifier()
	ca, cb := listen(t, na), listen(t, nb)

	var worst time.Duration
	for i := range 20 {
		key := fmt.Sprintf("r:lnch_%02d", i)
		sent := time.Now()
		na.Notify(key)
		cb.waitFor(t, []string{key}, 5*time.Second)
		cb.mu.Lock()
		lat := cb.seen[key].Sub(sent)
		cb.mu.Unlock()
		worst = max(worst, lat)
	}
	if worst > 500*time.Millisecond {
		t.Errorf("slowest wake-up took %s, want well under 500ms", worst)
	}
	t.Logf("slowest of 20 wake-ups across stores: %s", worst)

	// A listener hears notifications in the order they were committed, so once a key published after
	// another has arrived, the earlier one has arrived too, if it ever will.
	nb.Notify("s:from_b") // published after every r:lnch_ key of A was committed (B heard them all)
	ca.waitFor(t, []string{"s:from_b"}, 5*time.Second)
	if ca.has("r:lnch_00") {
		t.Error("a notifier delivered its own key to itself")
	}
	na.Notify("s:from_a") // published after s:from_b was committed (A heard it)
	cb.waitFor(t, []string{"s:from_a"}, 5*time.Second)
	if cb.has("s:from_b") {
		t.Error("b delivered its own key to itself")
	}
}

// Many keys published at once all arrive, packed several to a NOTIFY (counted with a listener of our
// own on the channel), and none is lost or invented.
func TestNotifierBatchesManyKeys(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	a, b := open(t, dsn), open(t, dsn)
	na, nb := a.Notifier(), b.Notifier()
	cb := listen(t, nb)

	// Count the NOTIFY payloads on the channel.
	var schema string
	if err := a.DB().NewRaw("SELECT current_schema()").Scan(t.Context(), &schema); err != nil {
		t.Fatal(err)
	}
	channel := "orchestrator_wake_" + schema
	raw := pgdriver.NewListener(a.DB())
	defer raw.Close()
	if err := raw.Listen(t.Context(), channel); err != nil {
		t.Fatal(err)
	}
	var (
		pmu      sync.Mutex
		payloads int
		maxLen   int
		probes   = make(chan string, 16)
	)
	go func() {
		for {
			_, p, err := raw.Receive(context.Background())
			if err != nil {
				return
			}
			if strings.HasPrefix(p, "probe:") {
				probes <- p
				continue
			}
			pmu.Lock()
			payloads++
			maxLen = max(maxLen, len(p))
			pmu.Unlock()
		}
	}()
	// probe publishes a probe and waits until the raw listener hears it: then it has heard every payload
	// committed before it too (a listener hears them in commit order). Until LISTEN is in effect a probe
	// is not heard, so it is published again every 50ms.
	probe := func(name string) {
		t.Helper()
		every := time.NewTicker(50 * time.Millisecond)
		defer every.Stop()
		deadline := time.After(10 * time.Second)
		for {
			if _, err := a.DB().ExecContext(t.Context(), "SELECT pg_notify(?, ?)", channel, "probe:"+name); err != nil {
				t.Fatal(err)
			}
			for heard := false; !heard; {
				select {
				case p := <-probes:
					if p == "probe:"+name {
						return
					}
				case <-every.C:
					heard = true // not yet: publish it again
				case <-deadline:
					t.Fatalf("the raw listener did not hear probe %s", name)
				}
			}
		}
	}
	probe("listening")

	const n = 20000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("e:ses_%026d", i)
	}
	start := time.Now()
	for _, k := range keys {
		na.Notify(k)
		na.Notify(k) // queued twice: sent once
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("queueing %d keys took %s: Notify must not block", 2*n, d)
	}
	cb.waitFor(t, keys, 30*time.Second)
	t.Logf("%d keys delivered in %s", n, time.Since(start))

	cb.mu.Lock()
	for _, k := range cb.keys {
		if k != "" && !strings.HasPrefix(k, "e:ses_") {
			t.Errorf("unexpected key %q delivered", k)
		}
	}
	deliveries := len(cb.keys)
	cb.mu.Unlock()
	if deliveries > 2*n+1 {
		t.Errorf("%d deliveries for %d keys", deliveries, n)
	}
	probe("after") // every payload of A was committed before: the raw listener has heard them all
	pmu.Lock()
	defer pmu.Unlock()
	if payloads == 0 || payloads > n/20 {
		t.Errorf("%d NOTIFY payloads carried %d keys; want them batched (at most %d)", payloads, n, n/20)
	}
	if maxLen >= 8000 {
		t.Errorf("a payload of %d bytes: PostgreSQL refuses 8000 and more", maxLen)
	}
	t.Logf("%d keys in %d payloads (largest %d bytes)", n, payloads, maxLen)
}

// Keys a payload cannot carry are dropped, not sent broken.
func TestNotifierDropsBadKeys(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	a, b := open(t, dsn), open(t, dsn)
	na := a.Notifier()
	cb := listen(t, b.Notifier())
	for _, k := range []string{"", "two\nlines", "nul\x00", strings.Repeat("x", 9000)} {
		na.Notify(k)
	}
	na.Notify("r:ok")
	cb.waitFor(t, []string{"r:ok"}, 5*time.Second)
	cb.mu.Lock()
	defer cb.mu.Unlock()
	for _, k := range cb.keys {
		if k != "" && k != "r:ok" {
			t.Errorf("delivered %q", k)
		}
	}
}

// Stores in different schemas of one database do not hear each other; a schema whose name is too long
// for a channel suffix still gets a channel of its own (a hash of its name).
func TestNotifierSchemasIsolated(t *testing.T) {
	t.Parallel()
	// 55 characters: a valid schema name (at most 63), too long for a channel suffix.
	long := "notify_" + strings.Repeat("abcdefghij", 4) + fmt.Sprintf("_%07d", time.Now().UnixNano()%1e7)
	dsns := []string{postgresSchema(t), postgresSchema(t), namedSchema(t, long)}
	var stores []*sqlstore.Store
	var cols []*collector
	for _, dsn := range dsns {
		s1, s2 := open(t, dsn), open(t, dsn)
		stores = append(stores, s1)
		cols = append(cols, listen(t, s2.Notifier()))
	}
	for i, s := range stores {
		s.Notifier().Notify(fmt.Sprintf("k:%d", i))
	}
	for i, c := range cols {
		c.waitFor(t, []string{fmt.Sprintf("k:%d", i)}, 5*time.Second)
	}
	// Every k: key was committed before this second round: once a listener hears its own schema's second
	// key, it has heard any k: key that reached its channel.
	for i, s := range stores {
		s.Notifier().Notify(fmt.Sprintf("m:%d", i))
	}
	for i, c := range cols {
		c.waitFor(t, []string{fmt.Sprintf("m:%d", i)}, 5*time.Second)
	}
	for i, c := range cols {
		for j := range stores {
			if j != i && c.has(fmt.Sprintf("k:%d", j)) {
				t.Errorf("schema %d heard schema %d's key", i, j)
			}
		}
	}
}

// namedSchema creates a schema with the given name (a plain lower-case identifier: pgdriver cannot pass
// a quoted one in search_path), dropped when the test ends, and returns a DSN whose search_path selects
// it.
func namedSchema(tb testing.TB, name string) string {
	tb.Helper()
	requirePostgres(tb)
	base := os.Getenv(postgresEnv)
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
	ident := name
	if _, err := admin.ExecContext(context.Background(), "CREATE SCHEMA "+ident); err != nil {
		admin.Close()
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", ident)
	u.RawQuery = q.Encode()
	return u.String()
}

// Listen returns when its connection is lost (here: the server ends the backend), so that the
// coordinator can start it again; the new Listen hears keys again and announces itself with "".
func TestNotifierListenReturnsOnConnectionLoss(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	a, b := open(t, dsn), open(t, dsn)
	na, nb := a.Notifier(), b.Notifier()

	c := newCollector()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- nb.Listen(ctx, c.deliver) }()
	c.waitFor(t, []string{""}, 10*time.Second)

	var schema string
	if err := a.DB().NewRaw("SELECT current_schema()").Scan(t.Context(), &schema); err != nil {
		t.Fatal(err)
	}
	var killed int
	err := a.DB().NewRaw("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = ?",
		`LISTEN "orchestrator_wake_`+schema+`"`).Scan(t.Context(), &killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminating the listening backend: %d terminated, %v", killed, err)
	}
	select {
	case err := <-done:
		if err == nil || ctx.Err() != nil {
			t.Fatalf("Listen returned %v, want a connection error", err)
		}
		t.Logf("Listen returned: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Listen did not return after its connection was terminated")
	}

	// Started again (as the coordinator does), it works.
	c2 := newCollector()
	go func() { done <- nb.Listen(ctx, c2.deliver) }()
	c2.waitFor(t, []string{""}, 10*time.Second)
	na.Notify("r:again")
	c2.waitFor(t, []string{"r:again"}, 5*time.Second)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Listen after cancel = %v", err)
	}
}

// A coordinator replica parked on one store is woken by a run created through another: the whole path,
// in-process, with two in-process coordinators on one schema.
func TestNotifierWakesParkedRunnerOnOtherReplica(t *testing.T) {
	t.Parallel()
	looked := make(chan struct{}, 1)
	ca, cb := twoReplicas(t, coordinator.Config{}, coordinator.Config{}, func(st store.Store) store.Store {
		return &lookSignal{Store: st, looked: looked}
	}, nil)
	bp := &orchestrator.Blueprint{Name: "noop", Type: orchestrator.AgentTypeDeterministic, Command: "true"}
	reg, err := ca.RegisterRunner(t.Context(), &orchestrator.RunnerRegistration{
		Hostname: "h", ProjectDir: "/p", ExecutorType: "deterministic", MaxConcurrent: 1,
		Blueprints: []*orchestrator.Blueprint{bp},
	})
	if err != nil {
		t.Fatal(err)
	}

	for i := range 5 {
		type polled struct {
			w   *orchestrator.Work
			err error
			at  time.Time
		}
		got := make(chan polled, 1)
		select {
		case <-looked: // a look of an earlier poll
		default:
		}
		go func() {
			w, err := ca.PollWork(t.Context(), orchestrator.PollParams{RunnerID: reg.RunnerID, Max: 1, Wait: 10 * time.Second})
			got <- polled{w, err, time.Now()}
		}()
		<-looked // the poll looked, found nothing and parks on A
		created := time.Now()
		res, err := cb.StartRun(t.Context(), orchestrator.StartRunParams{AgentName: "noop"})
		if err != nil {
			t.Fatal(err)
		}
		p := <-got
		if p.err != nil || len(p.w.Runs) != 1 || p.w.Runs[0].Run.ID != res.RunID {
			t.Fatalf("poll %d on A: %+v, %v; want run %s", i, p.w, p.err, res.RunID)
		}
		if d := p.at.Sub(created); d > 500*time.Millisecond {
			t.Errorf("run %d created on B reached the runner parked on A after %s", i, d)
		} else {
			t.Logf("run %d created on B reached the runner parked on A after %s", i, d)
		}
		if err := ca.ReportRun(t.Context(), orchestrator.RunReport{RunnerID: reg.RunnerID, RunID: res.RunID, Status: orchestrator.RunCompleted}); err != nil {
			t.Fatal(err)
		}
	}
}

// lookSignal is a Store that signals on looked each time a runner's poll ends a look that found nothing:
// its last read, of the runs the runner holds claimed, returned. The poll parks right after.
type lookSignal struct {
	store.Store
	looked chan struct{}
}

func (s *lookSignal) ListRuns(ctx context.Context, f orchestrator.RunFilter) ([]*orchestrator.Run, error) {
	runs, err := s.Store.ListRuns(ctx, f)
	if f.RunnerID != "" && len(f.Statuses) == 1 && f.Statuses[0] == orchestrator.RunClaimed {
		select {
		case s.looked <- struct{}{}:
		default:
		}
	}
	return runs, err
}

// listeningNotifier closes ready once its Listen is in effect (it delivers the empty key then), so that a
// test does not guess how long LISTEN takes on a loaded machine, and signals on agents each time it has
// delivered the key of another replica's agent change (the coordinator has cleared its agent cache then).
type listeningNotifier struct {
	store.Notifier
	ready  chan struct{}
	once   sync.Once
	agents chan struct{}
}

func readyWhenListening(n store.Notifier) *listeningNotifier {
	return &listeningNotifier{Notifier: n, ready: make(chan struct{}), agents: make(chan struct{}, 16)}
}

func (n *listeningNotifier) Listen(ctx context.Context, deliver func(string)) error {
	return n.Notifier.Listen(ctx, func(key string) {
		if key == "" {
			n.once.Do(func() { close(n.ready) })
		}
		deliver(key)
		if key == "agents" {
			select {
			case n.agents <- struct{}{}:
			default:
			}
		}
	})
}

// An agent changed through one replica is seen by StartRun on another at once, although that one cached
// it for an hour: the change's wake-up clears the cache.
func TestAgentChangeReachesOtherReplica(t *testing.T) {
	t.Parallel()
	cached := coordinator.Config{AgentCacheTTL: time.Hour}
	// The replica that writes announces the change whether or not it caches agents itself.
	for name, writer := range map[string]coordinator.Config{
		"writer caches": cached, "writer caches nothing": {AgentCacheTTL: -1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var nb *listeningNotifier
			ca, cb := twoReplicas(t, writer, cached, nil, func(n *listeningNotifier) { nb = n })
			agentChangeReachesB(t, ca, cb, nb.agents)
		})
	}
}

// agentChangeReachesB changes an agent through ca, waits for the change's wake-up to reach cb (bAgents),
// and checks that StartRun on cb, which caches agents for an hour, sees the change then.
func agentChangeReachesB(t *testing.T, ca, cb *coordinator.Coordinator, bAgents <-chan struct{}) {
	reached := func(what string) {
		t.Helper()
		select {
		case <-bAgents:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the wake-up did not reach B", what)
		}
	}
	if _, err := ca.CreateAgent(t.Context(), &orchestrator.Blueprint{Name: "helper"}); err != nil {
		t.Fatal(err)
	}
	reached("created on A")
	startOnB := func() error {
		_, err := cb.StartRun(t.Context(), orchestrator.StartRunParams{AgentName: "helper", Prompt: "hi"})
		return err
	}
	if err := startOnB(); err != nil {
		t.Fatalf("StartRun on B: %v", err)
	}
	// B has the agent cached now.
	if _, err := ca.UpdateAgent(t.Context(), "helper", &orchestrator.Blueprint{Disabled: true}); err != nil {
		t.Fatal(err)
	}
	reached("disabled on A")
	if err := startOnB(); orchestrator.ErrorCode(err) != "agent_disabled" {
		t.Fatalf("StartRun on B after the agent was disabled on A = %v, want agent_disabled", err)
	}
	if err := ca.DeleteAgent(t.Context(), "helper"); err != nil {
		t.Fatal(err)
	}
	reached("deleted on A")
	if err := startOnB(); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Fatalf("StartRun on B after the agent was deleted on A = %v, want ErrNotFound", err)
	}
}

// twoReplicas starts two coordinators on one fresh PostgreSQL schema, each with its Notifier, and returns
// once both listen. cfg (its Store and Notifier set here) configures both.
//
// wrapA, when not nil, wraps replica A's store; notifierB, when not nil, is handed replica B's notifier.
func twoReplicas(t *testing.T, cfgA, cfgB coordinator.Config, wrapA func(store.Store) store.Store,
	notifierB func(*listeningNotifier)) (a, b *coordinator.Coordinator) {
	t.Helper()
	dsn := postgresSchema(t)
	var cs []*coordinator.Coordinator
	for i, cfg := range []coordinator.Config{cfgA, cfgB} {
		st := open(t, dsn)
		n := readyWhenListening(st.Notifier())
		cfg.Store, cfg.Notifier = st, n
		if i == 0 && wrapA != nil {
			cfg.Store = wrapA(cfg.Store)
		}
		if i == 1 && notifierB != nil {
			notifierB(n)
		}
		c, err := coordinator.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Stop)
		select {
		case <-n.ready:
		case <-time.After(10 * time.Second):
			t.Fatal("a replica's notifier did not start listening")
		}
		cs = append(cs, c)
	}
	return cs[0], cs[1]
}
