//! The engine's own costs, measured side by side in one process and reported as ratios: the
//! machine these run on is shared, so absolute figures move with its load while the ratio of
//! two measurements taken in alternation moves much less.
//!
//! 1. Explorer overhead: a whole exhaustive `Check` of the service-binding checkout (two
//!    events, each an idempotent INSERT and a SELECT on D1, a `unique` invariant, resends),
//!    driven by the simulated host, against the floor: the very statements those runs executed,
//!    run with bare rusqlite in one transaction per run that is rolled back. If the ratio is
//!    small, SQLite (and the Worker's JavaScript) limit throughput, not the explorer.
//! 2. Partial-order reduction: the same concurrent systems explored with reduction off and on;
//!    the verdicts must agree (and, for BOUNDED ones, the sets of final states); the factor is
//!    runs off / runs on.
//! 3. Memory: resident set size after 10,000 and 100,000 runs of case 1, each measurement in a
//!    fresh child process so that the heap of the other cases cannot hide growth.
//!
//! Run with `cargo bench --features testing`: the simulated host (`src/testing.rs`) is only
//! public with that feature.

#[cfg(not(feature = "testing"))]
fn main() {
    eprintln!(
        "benches/engine.rs drives the engine with the simulated host of src/testing.rs, which \
         only the `testing` feature makes public.\nRun: cargo bench --features testing"
    );
}

#[cfg(feature = "testing")]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == memory::CHILD_FLAG) {
        memory::child(args.get(at + 1).map_or("", String::as_str));
        return;
    }
    let started = std::time::Instant::now();
    overhead::report();
    reduction::report();
    memory::report();
    println!(
        "\ntotal bench time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// The system of cases 1 and 3: the service-binding example's payments Worker, fixed (its
/// idempotency key is the event's, so a resend charges nothing more).
#[cfg(feature = "testing")]
mod checkout {
    use eutaxy_engine::check::Check;
    use eutaxy_engine::config::StrategyKind;
    use eutaxy_engine::testing::{config, one_charge_per_order, FakeEffect, FakeHost};

    pub const SCHEMA: &str = "CREATE TABLE charges (
        charge_id INTEGER PRIMARY KEY AUTOINCREMENT,
        idempotency_key TEXT NOT NULL UNIQUE,
        order_id TEXT NOT NULL,
        amount_cents INTEGER NOT NULL,
        created_at TEXT NOT NULL DEFAULT (datetime('now')));";

    pub const EVENTS: usize = 2;
    /// The client resends a request it got no answer for, as in the example.
    pub const RETRIES: u32 = 3;

    /// The payments Worker's two statements; D1 documents a transient error for both.
    pub fn effects() -> Vec<FakeEffect> {
        vec![
            FakeEffect::sql(
                "D1:DB run",
                "DB",
                "INSERT INTO charges (idempotency_key, order_id, amount_cents) \
                 VALUES ('$EVENT', 'o-$N', 2500) ON CONFLICT (idempotency_key) DO NOTHING",
            )
            .transient(),
            FakeEffect::sql(
                "D1:DB first",
                "DB",
                "SELECT charge_id FROM charges WHERE idempotency_key = '$EVENT'",
            )
            .transient(),
        ]
    }

    /// How a check of the checkout is bounded, and whether its Worker touches D1 at all.
    #[derive(Clone, Copy)]
    pub struct Bounds {
        pub faults: u32,
        /// The client's resends, and the check's `maxRedeliveries`.
        pub retries: u32,
        pub strategy: StrategyKind,
        pub runs_max: u64,
        /// False: the same effects without SQL and no database or invariant, which leaves
        /// the explorer's own bookkeeping.
        pub sql: bool,
    }

    impl Bounds {
        /// The example's bounds, exhaustively.
        pub fn example(faults: u32) -> Self {
            Self {
                faults,
                retries: RETRIES,
                strategy: StrategyKind::Exhaustive,
                runs_max: 1_000_000,
                sql: true,
            }
        }

        pub fn host(&self) -> FakeHost {
            let mut effects = effects();
            if !self.sql {
                for effect in &mut effects {
                    effect.sql = None;
                }
            }
            FakeHost::uniform(EVENTS, &effects, self.retries)
        }

        /// A sealed check, ready for its first run: setup is not part of any per-run figure.
        pub fn check(&self) -> Check {
            let mut config = config(EVENTS, self.faults, self.retries);
            config.strategy = self.strategy;
            config.runs_max = self.runs_max;
            if self.sql {
                config.invariants = vec![one_charge_per_order()];
            }
            let mut check = Check::new(config).expect("a valid config");
            if self.sql {
                check.d1_open("DB").expect("open");
                check.d1_setup("DB", SCHEMA).expect("schema");
            }
            check.seal().expect("seal");
            check
        }
    }
}

/// The floor of case 1: SQL alone, as bare rusqlite runs it.
#[cfg(feature = "testing")]
mod bare {
    use eutaxy_engine::strategy::Decision;
    use eutaxy_engine::testing::{FakeEffect, PlayedRun};
    use rusqlite::types::Value;
    use rusqlite::Connection;

    /// The statements a played run executed, in order: those of every effect that happened
    /// (proceeded, or crashed after), expanded as the simulated host expands them.
    pub fn statements(run: &PlayedRun, events: &[String], effects: &[FakeEffect]) -> Vec<String> {
        run.decisions
            .iter()
            .filter(|(_, _, d)| matches!(d, Decision::Proceed | Decision::CrashAfter))
            .filter_map(|(invocation, index, _)| {
                let name = invocation.split('#').next()?;
                let number = events.iter().position(|e| e == name)? + 1;
                let (_, sql) = effects[*index as usize].sql.as_ref()?;
                Some(
                    sql.replace("$EVENT", name)
                        .replace("$N", &number.to_string()),
                )
            })
            .collect()
    }

    /// An in-memory database with the schema, as every run starts from it.
    pub fn database(schema: &str) -> Connection {
        let connection = Connection::open_in_memory().expect("in-memory SQLite");
        connection.execute_batch(schema).expect("schema");
        connection
    }

    /// One run: its statements inside a transaction that is then rolled back, as the engine
    /// resets a run; rows are read into values, as the engine reads them. Answers the rows read
    /// so that nothing is optimised away.
    pub fn run(connection: &Connection, statements: &[String]) -> usize {
        connection
            .prepare_cached("BEGIN")
            .and_then(|mut s| s.execute([]))
            .expect("BEGIN");
        let mut rows_read = 0;
        for sql in statements {
            rows_read += execute(connection, sql).len();
        }
        connection
            .prepare_cached("ROLLBACK")
            .and_then(|mut s| s.execute([]))
            .expect("ROLLBACK");
        rows_read
    }

    fn execute(connection: &Connection, sql: &str) -> Vec<Vec<Value>> {
        let mut statement = connection.prepare_cached(sql).expect("prepare");
        let width = statement.column_count();
        let mut rows = Vec::new();
        let mut cursor = statement.raw_query();
        while let Some(row) = cursor.next().expect("step") {
            rows.push((0..width).map(|i| row.get_unwrap::<_, Value>(i)).collect());
        }
        rows
    }
}

/// Case 1: the explorer's cost per run against bare SQLite's.
#[cfg(feature = "testing")]
mod overhead {
    use std::time::{Duration, Instant};

    use eutaxy_engine::testing::{config, PlayedRun};

    use crate::checkout::{self, Bounds};
    use crate::{bare, kind, median};

    /// Rounds of each side, in alternation: a burst of load on the shared machine then hits
    /// every side alike, and the median drops the round it hit hardest.
    const ROUNDS: usize = 5;
    /// Runs per side per round, at least: whole checks are played until this many ran.
    const RUNS_PER_ROUND: usize = 20_000;

    /// Microseconds per run of each side, medians over the rounds.
    struct Measured {
        runs_per_check: usize,
        statements_per_run: f64,
        engine: f64,
        no_sql: f64,
        bare: f64,
    }

    pub fn report() {
        println!("1. Explorer overhead per run: a whole Check (FakeHost) vs the same SQL on bare rusqlite");
        println!(
            "   checkout: {} events x (INSERT .. ON CONFLICT DO NOTHING + SELECT), unique invariant, {} resends, exhaustive;",
            checkout::EVENTS,
            checkout::RETRIES
        );
        println!(
            "   median of {ROUNDS} alternating rounds of >= {RUNS_PER_ROUND} runs per side; no-SQL = the same check with effects that touch no database"
        );
        println!(
            "   {:>6} {:>10} {:>9} {:>11} {:>11} {:>11} {:>8}",
            "faults", "runs/check", "stmts/run", "engine µs", "no-SQL µs", "SQLite µs", "ratio"
        );
        for faults in [1, 2] {
            let m = measure(faults);
            println!(
                "   {faults:>6} {:>10} {:>9.2} {:>11.2} {:>11.2} {:>11.2} {:>7.1}x",
                m.runs_per_check,
                m.statements_per_run,
                m.engine,
                m.no_sql,
                m.bare,
                m.engine / m.bare
            );
        }
        println!(
            "   ratio = engine / SQLite: what a run costs the engine over the SQL its Worker ran"
        );
    }

    fn measure(faults: u32) -> Measured {
        let with_sql = Bounds::example(faults);
        let no_sql = Bounds {
            sql: false,
            ..with_sql
        };
        let (runs, _) = one_check(&with_sql);
        let statements = statements(&runs);
        let checks = RUNS_PER_ROUND.div_ceil(runs.len());
        let per_run = |took: Duration| micros(took) / (checks * runs.len()) as f64;
        let (mut engine, mut explorer, mut floor) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            engine.push(per_run(time_engine(&with_sql, checks)));
            explorer.push(per_run(time_engine(&no_sql, checks)));
            floor.push(per_run(time_bare(&statements, checks)));
        }
        let statement_count: usize = statements.iter().map(Vec::len).sum();
        Measured {
            runs_per_check: runs.len(),
            statements_per_run: statement_count as f64 / runs.len() as f64,
            engine: median(engine),
            no_sql: median(explorer),
            bare: median(floor),
        }
    }

    /// The SQL each run executed, for the floor to execute the same.
    fn statements(runs: &[PlayedRun]) -> Vec<Vec<String>> {
        let events = config(checkout::EVENTS, 0, 0).events;
        let effects = checkout::effects();
        runs.iter()
            .map(|run| bare::statements(run, &events, &effects))
            .collect()
    }

    /// Every run of one exhaustive check, and the time its runs took (setup excluded).
    fn one_check(bounds: &Bounds) -> (Vec<PlayedRun>, Duration) {
        let host = bounds.host();
        let mut check = bounds.check();
        let started = Instant::now();
        let mut runs = Vec::new();
        while let Some(plan) = check.next_run(0).expect("next run") {
            runs.push(host.play_run(&mut check, plan).expect("run"));
        }
        let took = started.elapsed();
        let verdict = check.verdict().expect("verdict");
        assert_eq!(
            kind(&verdict),
            "BOUNDED",
            "the fixed checkout holds: {verdict:?}"
        );
        (runs, took)
    }

    fn micros(duration: Duration) -> f64 {
        duration.as_secs_f64() * 1e6
    }

    fn time_engine(bounds: &Bounds, checks: usize) -> Duration {
        (0..checks).map(|_| one_check(bounds).1).sum()
    }

    fn time_bare(statements: &[Vec<String>], checks: usize) -> Duration {
        let connection = bare::database(checkout::SCHEMA);
        let started = Instant::now();
        let mut rows = 0;
        for _ in 0..checks {
            for run in statements {
                rows += bare::run(&connection, run);
            }
        }
        let took = started.elapsed();
        assert!(rows > 0, "the SELECTs found their charges");
        took
    }
}

/// Case 2: partial-order reduction, off against on, on the systems of `concurrency_tests.rs`.
#[cfg(feature = "testing")]
mod reduction {
    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};

    use eutaxy_engine::check::Check;
    use eutaxy_engine::config::CheckConfig;
    use eutaxy_engine::testing::{
        check_then_insert, config, one_charge_per_order, read_then_write, ConcurrentHost,
        FakeEffect,
    };
    use eutaxy_engine::verdict::Verdict;

    use crate::{kind, median};

    const SCHEMA: &str = "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER);
        INSERT INTO accounts VALUES (1, 0);
        CREATE TABLE other (id INTEGER PRIMARY KEY, balance INTEGER);
        INSERT INTO other VALUES (1, 0);
        CREATE TABLE charges (id INTEGER PRIMARY KEY, order_id TEXT);";

    /// Timed rounds per side and system; the median is reported.
    const ROUNDS: usize = 5;
    /// A round lasts at least this long.
    const ROUND_MIN: Duration = Duration::from_millis(30);

    struct System {
        name: &'static str,
        effects: Vec<Vec<FakeEffect>>,
        faults: u32,
        /// Whether the `unique` invariant on charges is checked (then the race is VIOLATED).
        unique: bool,
    }

    /// What one exploration gave: its verdict, the final states its runs reached, its runs
    /// (exploring and shrinking alike: the host plays both).
    struct Explored {
        verdict: Verdict,
        states: BTreeSet<String>,
        runs: usize,
        took: Duration,
    }

    pub fn report() {
        println!("\n2. Partial-order reduction (ConcurrentHost, every invocation live at once, exhaustive)");
        println!(
            "   {:<34} {:>6} {:>9} {:>8} {:>8} {:>8} {:>10} {:>10} {:>7}",
            "system",
            "faults",
            "verdict",
            "runs off",
            "runs on",
            "factor",
            "off runs/s",
            "on runs/s",
            "time x"
        );
        for system in systems() {
            let (off, on) = compare(&system);
            let agree = same_verdict(&off, &on);
            println!(
                "   {:<34} {:>6} {:>9} {:>8} {:>8} {:>7.1}x {:>10.0} {:>10.0} {:>6.1}x{}",
                system.name,
                system.faults,
                kind(&on.verdict),
                off.runs,
                on.runs,
                off.runs as f64 / on.runs as f64,
                off.runs as f64 / off.took.as_secs_f64(),
                on.runs as f64 / on.took.as_secs_f64(),
                off.took.as_secs_f64() / on.took.as_secs_f64(),
                if agree { "" } else { "  VERDICTS DIFFER" }
            );
        }
        println!("   factor = runs off / runs on; time x = wall time off / wall time on (what reduction saves, net of its own cost)");
    }

    fn systems() -> Vec<System> {
        let system = |name, effects, faults, unique| System {
            name,
            effects,
            faults,
            unique,
        };
        let same_row = || vec![read_then_write("accounts"), read_then_write("accounts")];
        let race = || vec![check_then_insert(), check_then_insert()];
        let three = || {
            vec![
                read_then_write("accounts"),
                read_then_write("other"),
                check_then_insert(),
            ]
        };
        let three_same = || vec![read_then_write("accounts"); 3];
        vec![
            system("2x read_then_write, same row", same_row(), 0, false),
            system("2x read_then_write, same row", same_row(), 1, false),
            system("2x check_then_insert", race(), 0, false),
            system("2x check_then_insert", race(), 1, false),
            system("2x check_then_insert + unique", race(), 1, true),
            system("rtw(a) + rtw(b) + check_then_insert", three(), 0, false),
            system("rtw(a) + rtw(b) + check_then_insert", three(), 1, false),
            system("3x read_then_write, same row", three_same(), 0, false),
            system("3x read_then_write, same row", three_same(), 1, false),
        ]
    }

    /// Everything a run can leave behind, so that reduction is seen to miss no final state.
    fn final_state(check: &mut Check) -> String {
        let sql = "SELECT (SELECT balance FROM accounts), (SELECT balance FROM other), \
                   (SELECT group_concat(order_id) FROM charges)";
        let result = check.d1_run("DB", sql, &[]).expect("state query");
        format!("{:?}", result.rows)
    }

    fn config_for(system: &System, reduce: bool) -> CheckConfig {
        let events = system.effects.len();
        let mut config = config(events, system.faults, 0);
        config.max_concurrent_invocations = events as u32;
        config.partial_order_reduction = reduce;
        if system.unique {
            config.invariants = vec![one_charge_per_order()];
        }
        config
    }

    fn explore(system: &System, reduce: bool) -> Explored {
        let mut host = ConcurrentHost::new(system.effects.clone(), system.effects.len());
        host.final_state = Some(final_state);
        let mut check = Check::new(config_for(system, reduce)).expect("a valid config");
        check.d1_open("DB").expect("open");
        check.d1_setup("DB", SCHEMA).expect("schema");
        check.seal().expect("seal");
        let started = Instant::now();
        let (runs, verdict) = host.check(&mut check).expect("check");
        let took = started.elapsed();
        Explored {
            verdict,
            runs: runs.len(),
            states: runs.into_iter().map(|r| r.state).collect(),
            took,
        }
    }

    /// Explores the system with reduction off and on, each taking the median time of `ROUNDS`
    /// rounds in alternation; a round repeats the exploration until it lasts `ROUND_MIN`, so
    /// that small systems are not timed at the clock's grain.
    fn compare(system: &System) -> (Explored, Explored) {
        let (mut off, mut on) = (explore(system, false), explore(system, true));
        let repeats = |first: &Explored| {
            let took = first.took.max(Duration::from_micros(1));
            ROUND_MIN.as_nanos().div_ceil(took.as_nanos()) as u32
        };
        let (repeats_off, repeats_on) = (repeats(&off), repeats(&on));
        let (mut times_off, mut times_on) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            times_off.push(round(system, false, repeats_off, &off.verdict));
            times_on.push(round(system, true, repeats_on, &on.verdict));
        }
        off.took = Duration::from_secs_f64(median(times_off));
        on.took = Duration::from_secs_f64(median(times_on));
        (off, on)
    }

    /// Seconds per exploration over `repeats` explorations, which must all end as the first.
    fn round(system: &System, reduce: bool, repeats: u32, verdict: &Verdict) -> f64 {
        let mut total = Duration::ZERO;
        for _ in 0..repeats {
            let explored = explore(system, reduce);
            assert_eq!(
                &explored.verdict, verdict,
                "the exploration is deterministic"
            );
            total += explored.took;
        }
        total.as_secs_f64() / f64::from(repeats)
    }

    /// Reduction must not change the answer: the same kind of verdict; for BOUNDED, the same
    /// final states; for VIOLATED, the same invariant and shrunk run seed.
    fn same_verdict(off: &Explored, on: &Explored) -> bool {
        match (&off.verdict, &on.verdict) {
            (Verdict::Bounded { .. }, Verdict::Bounded { .. }) => off.states == on.states,
            (
                Verdict::Violated {
                    invariant: a,
                    run_seed: seed_a,
                    ..
                },
                Verdict::Violated {
                    invariant: b,
                    run_seed: seed_b,
                    ..
                },
            ) => a == b && seed_a == seed_b,
            _ => false,
        }
    }
}

/// Case 3: resident memory over many runs of case 1, each scenario in a child process of its
/// own, so that the heap of the other cases (which the allocator keeps) can hide no growth.
#[cfg(feature = "testing")]
mod memory {
    use std::process::Command;

    use eutaxy_engine::config::StrategyKind;

    use crate::checkout::Bounds;
    use crate::kind;

    pub const CHILD_FLAG: &str = "--memory-child";
    const FIRST: u64 = 10_000;
    const LAST: u64 = 100_000;
    /// RSS may grow this much between the two readings and still count as flat: allocator
    /// arenas and SQLite's page cache grow in steps.
    const FLAT_RATIO: f64 = 1.05;

    /// A way of playing `LAST` runs of the checkout.
    struct Scenario {
        name: &'static str,
        description: &'static str,
        bounds: Bounds,
        /// Whether the runs come from checks one after another (the checkout's exhaustive tree
        /// ends long before `LAST` runs) rather than from one check.
        repeated: bool,
    }

    fn scenarios() -> [Scenario; 3] {
        let example = Bounds::example(2);
        [
            // A leak across runs and checks.
            Scenario {
                name: "repeated",
                description: "exhaustive checks (2 faults), one after another",
                bounds: example,
                repeated: true,
            },
            // State one check keeps per run, where the tree never ends.
            Scenario {
                name: "random",
                description: "one random-walk check (2 faults)",
                bounds: Bounds {
                    strategy: StrategyKind::Random,
                    runs_max: LAST,
                    ..example
                },
                repeated: false,
            },
            // State the exhaustive explorer keeps per run (the distinct schedules it counts),
            // with bounds wide enough for a tree of more than `LAST` leaves.
            Scenario {
                name: "exhaustive",
                description: "one exhaustive check (6 faults, 6 resends)",
                bounds: Bounds {
                    faults: 6,
                    retries: 6,
                    runs_max: LAST,
                    ..example
                },
                repeated: false,
            },
        ]
    }

    pub fn report() {
        println!("\n3. Memory: RSS (/proc/self/statm resident x 4096) over runs of the checkout, a fresh process each");
        println!(
            "   {:<48} {:>14} {:>14} {:>8}  verdict",
            "scenario", "RSS @10k runs", "RSS @100k runs", "ratio"
        );
        for scenario in scenarios() {
            let description = scenario.description;
            match spawn(scenario.name) {
                Ok((first, last)) => println!(
                    "   {description:<48} {:>10} KiB {:>10} KiB {:>7.3}x  {}",
                    first / 1024,
                    last / 1024,
                    last as f64 / first as f64,
                    judge(first, last)
                ),
                Err(e) => println!("   {description:<48} FAILED: {e}"),
            }
        }
        println!(
            "   sampling remembers an 8-byte hash per distinct schedule (capped at 1,000,000); depth-first search, which never repeats one, remembers none"
        );
    }

    fn judge(first: u64, last: u64) -> String {
        if last as f64 <= first as f64 * FLAT_RATIO {
            "flat".into()
        } else {
            format!("GROWS by {} KiB", (last - first) / 1024)
        }
    }

    /// Runs this bench again as a child playing `scenario`; answers its two readings.
    fn spawn(scenario: &str) -> Result<(u64, u64), String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let output = Command::new(exe)
            .args([CHILD_FLAG, scenario])
            .output()
            .map_err(|e| e.to_string())?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).into_owned());
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let mut readings = text.split_whitespace().map(str::parse::<u64>);
        match (readings.next(), readings.next()) {
            (Some(Ok(first)), Some(Ok(last))) => Ok((first, last)),
            _ => Err(format!("unexpected child output: {text}")),
        }
    }

    /// In the child: plays the scenario and prints the RSS after `FIRST` and `LAST` runs.
    pub fn child(name: &str) {
        let scenario = scenarios()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no memory scenario {name:?}"));
        let (first, last) = play(&scenario);
        println!("{first} {last}");
    }

    fn play(scenario: &Scenario) -> (u64, u64) {
        let host = scenario.bounds.host();
        let (mut runs, mut first, mut last) = (0, None, None);
        while last.is_none() {
            let mut check = scenario.bounds.check();
            while let Some(plan) = check.next_run(0).expect("next run") {
                host.play_run(&mut check, plan).expect("run");
                runs += 1;
                if runs == FIRST {
                    first = Some(rss_bytes());
                } else if runs == LAST {
                    last = Some(rss_bytes());
                }
            }
            let verdict = check.verdict().expect("verdict");
            let expected = if scenario.repeated {
                "BOUNDED"
            } else {
                "INCOMPLETE"
            };
            assert_eq!(kind(&verdict), expected, "{}: {verdict:?}", scenario.name);
        }
        (
            first.expect("FIRST runs were played"),
            last.expect("LAST runs were played"),
        )
    }

    /// Resident pages, as the kernel counts them, in bytes.
    fn rss_bytes() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
        let pages: u64 = statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .expect("statm's second field");
        pages * 4096
    }
}

/// The median of `values`: the round a burst of load hit hardest does not count.
#[cfg(feature = "testing")]
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A verdict's kind, as the report names it.
#[cfg(feature = "testing")]
fn kind(verdict: &eutaxy_engine::verdict::Verdict) -> &'static str {
    use eutaxy_engine::verdict::Verdict;
    match verdict {
        Verdict::Bounded { .. } => "BOUNDED",
        Verdict::Incomplete { .. } => "INCOMPLETE",
        Verdict::Violated { .. } => "VIOLATED",
        Verdict::Held { .. } => "HELD",
    }
}
