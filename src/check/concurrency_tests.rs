//! Concurrent invocations: partial-order reduction against plain search, sampling, shrinking
//! of context switches, replay and shards, driven by `ConcurrentHost`.

use std::collections::BTreeSet;

use super::*;
use crate::config::{InvariantSpec, StrategyKind};
use crate::shard::Shard;
use crate::testing::{
    check_then_insert, config, one_charge_per_order, read_then_write, ConcurrentHost, FakeEffect,
    PlayedRun,
};

const SCHEMA: &str = "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER);
    INSERT INTO accounts VALUES (1, 0), (2, 0);
    CREATE TABLE other (id INTEGER PRIMARY KEY, balance INTEGER);
    INSERT INTO other VALUES (1, 0);
    CREATE TABLE charges (id INTEGER PRIMARY KEY, order_id TEXT);
    CREATE TABLE x (v INTEGER); INSERT INTO x VALUES (1);
    CREATE TABLE y (v INTEGER); INSERT INTO y VALUES (1);
    CREATE TABLE log1 (v INTEGER); CREATE TABLE log2 (v INTEGER);
    CREATE TABLE log3 (v INTEGER);";

fn setup(mut config: CheckConfig, concurrent: u32, reduce: bool) -> Check {
    config.max_concurrent_invocations = concurrent;
    config.partial_order_reduction = reduce;
    let mut check = Check::new(config).unwrap();
    check.d1_open("DB").unwrap();
    check.d1_setup("DB", SCHEMA).unwrap();
    check.seal().unwrap();
    check
}

fn state(check: &mut Check) -> String {
    let rows = |check: &mut Check, sql: &str| {
        let result = check.d1_run("DB", sql, &[]).unwrap();
        format!("{:?}", result.rows)
    };
    let accounts = rows(check, "SELECT * FROM accounts ORDER BY id");
    let other = rows(check, "SELECT * FROM other ORDER BY id");
    let charges = rows(check, "SELECT order_id FROM charges ORDER BY order_id");
    let vars = rows(check, "SELECT (SELECT v FROM x), (SELECT v FROM y)");
    let logs = rows(
        check,
        "SELECT (SELECT group_concat(v) FROM log1), (SELECT group_concat(v) FROM log2), \
         (SELECT group_concat(v) FROM log3)",
    );
    format!("{accounts} {other} {charges} {vars} {logs}")
}

fn explore(
    effects: Vec<Vec<FakeEffect>>,
    config: CheckConfig,
    reduce: bool,
) -> (Vec<PlayedRun>, Verdict) {
    let concurrent = effects.len() as u32;
    let mut host = ConcurrentHost::new(effects, concurrent as usize);
    host.final_state = Some(state);
    host.check(&mut setup(config, concurrent, reduce)).unwrap()
}

fn states(runs: &[PlayedRun]) -> BTreeSet<String> {
    runs.iter().map(|r| r.state.clone()).collect()
}

fn with_unique(mut config: CheckConfig) -> CheckConfig {
    config.invariants = vec![one_charge_per_order()];
    config
}

#[test]
fn reduction_reaches_the_same_states_in_far_fewer_runs() {
    let same_row = vec![read_then_write("accounts"), read_then_write("accounts")];
    let tables = vec![read_then_write("accounts"), read_then_write("other")];
    let race = vec![check_then_insert(), check_then_insert()];
    let three = vec![
        read_then_write("accounts"),
        read_then_write("other"),
        check_then_insert(),
    ];
    // (system, faults, plain runs, reduced runs, distinct final states)
    let cases = [
        // Plain: A's two steps interleave with B's delivery and two steps, C(5, 2) = 10.
        // Reduced: the two reads commute, so 4 traces remain: A before B, B before A, and
        // the two where both read before either writes (which writes last differs).
        (&same_row, 0, 10, 4, 2),
        (&same_row, 1, 70, 30, 4),
        // Nothing conflicts across tables: one trace.
        (&tables, 0, 10, 1, 1),
        (&tables, 1, 70, 9, 3),
        (&race, 0, 10, 4, 2),
        (&race, 1, 62, 26, 2),
        (&three, 0, 280, 1, 1),
        (&three, 1, 2520, 13, 4),
    ];
    for (effects, faults, plain_runs, reduced_runs, distinct) in cases {
        let events = effects.len();
        let (plain, plain_verdict) = explore(effects.clone(), config(events, faults, 0), false);
        let (reduced, reduced_verdict) = explore(effects.clone(), config(events, faults, 0), true);
        assert_eq!(
            (plain.len(), reduced.len(), states(&plain).len()),
            (plain_runs, reduced_runs, distinct),
            "{events} events, {faults} faults"
        );
        assert_eq!(states(&plain), states(&reduced));
        assert!(matches!(plain_verdict, Verdict::Bounded { .. }));
        assert!(matches!(reduced_verdict, Verdict::Bounded { .. }));
    }
}

/// A tiny deterministic generator for the systems below.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Invocations whose effects read a shared variable into their own log, or write one with a
/// value that depends on the old value and on who writes: every interleaving difference shows
/// in the final state.
fn random_system(rng: &mut Lcg) -> Vec<Vec<FakeEffect>> {
    let events = 2 + rng.below(2) as usize;
    (0..events)
        .map(|_| {
            (0..1 + rng.below(3))
                .map(|k| {
                    let var = ["x", "y"][rng.below(2) as usize];
                    if rng.below(2) == 0 {
                        FakeEffect::sql(
                            "D1:DB read",
                            "DB",
                            &format!("INSERT INTO log$N SELECT v FROM {var}"),
                        )
                    } else {
                        FakeEffect::sql(
                            "D1:DB write",
                            "DB",
                            &format!("UPDATE {var} SET v = v * 7 + $N * 10 + {k}"),
                        )
                    }
                })
                .collect()
        })
        .collect()
}

/// Compares reduced and plain search on `count` random systems whose plain search takes at
/// most `runs_max` runs (larger ones are skipped); answers the runs each took in total.
fn compare_on_random_systems(seed: u64, count: u32, runs_max: u64) -> (usize, usize) {
    let mut rng = Lcg(seed);
    let (mut plain_total, mut reduced_total) = (0, 0);
    for system in 0..count {
        let effects = random_system(&mut rng);
        let events = effects.len();
        let faults = u32::from(system % 3 == 0);
        let retries = u32::from(system % 4 == 1);
        let mut config = config(events, faults, retries);
        config.runs_max = runs_max;
        let mut host = ConcurrentHost::new(effects.clone(), events);
        host.final_state = Some(state);
        host.retries = retries;
        let (plain, verdict) = host
            .check(&mut setup(config.clone(), events as u32, false))
            .unwrap();
        if !matches!(verdict, Verdict::Bounded { .. }) {
            continue;
        }
        let (reduced, _) = host.check(&mut setup(config, events as u32, true)).unwrap();
        let (all, found) = (states(&plain), states(&reduced));
        let missing: Vec<&String> = all.difference(&found).collect();
        assert!(
            missing.is_empty() && found.len() == all.len(),
            "system {system} ({:?}): {} of {} states missing, e.g. {:?}",
            effects
                .iter()
                .map(|e| e
                    .iter()
                    .map(|f| f.sql.clone().unwrap().1)
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            missing.len(),
            all.len(),
            missing.first()
        );
        assert!(reduced.len() <= plain.len());
        plain_total += plain.len();
        reduced_total += reduced.len();
    }
    (plain_total, reduced_total)
}

#[test]
fn reduction_agrees_with_plain_search_on_random_systems() {
    let (plain, reduced) = compare_on_random_systems(2026, 40, 1_500);
    assert!(plain > 2_000, "the systems are not trivial: {plain}");
    assert!(reduced * 4 < plain, "{reduced} vs {plain}");
}

/// The same on more and larger systems; slow, run by hand:
/// `cargo test --release reduction_agrees_on_many -- --ignored`.
#[test]
#[ignore]
fn reduction_agrees_on_many_random_systems() {
    for seed in 0..4 {
        compare_on_random_systems(seed, 100, 10_000);
    }
}

#[test]
fn both_searches_find_the_check_then_insert_race() {
    let race = vec![check_then_insert(), check_then_insert()];
    for reduce in [false, true] {
        let mut host = ConcurrentHost::new(race.clone(), 2);
        host.final_state = Some(state);
        let (_, verdict) = host
            .check(&mut setup(with_unique(config(2, 0, 0)), 2, reduce))
            .unwrap();
        let Verdict::Violated {
            invariant,
            run_seed,
            strategy,
            ..
        } = verdict
        else {
            panic!("expected a violation, got {verdict:?}");
        };
        assert_eq!(invariant, "one-charge-per-order");
        assert_eq!(strategy, Some(StrategyName::Exhaustive));
        // Shrunk to the one context switch the race needs: req-1 checks, then req-2 is
        // delivered before req-1 inserts; req-2 then checks and inserts, and so does req-1.
        assert_eq!(
            run_seed,
            format!("{:016x}:1,2:-:0:1.1@1=2.1", fnv1a("checkout"))
        );
    }
}

/// Replays `run_seed` and answers its verdict.
fn replay(effects: &[Vec<FakeEffect>], config: CheckConfig, run_seed: &str) -> Verdict {
    let mut config = config;
    config.replay = Some(run_seed.to_string());
    let host = ConcurrentHost::new(effects.to_vec(), effects.len());
    let (runs, verdict) = host
        .check(&mut setup(config, effects.len() as u32, true))
        .unwrap();
    assert_eq!(runs.len(), 1);
    verdict
}

#[test]
fn pct_finds_a_depth_two_race_and_its_run_seed_replays() {
    // Three racers and a bystander: the race needs req-2 (or req-3) to check between req-1's
    // check and insert, one priority change away from running each to completion.
    let effects = vec![
        check_then_insert(),
        check_then_insert(),
        read_then_write("other"),
    ];
    let mut config = with_unique(config(3, 0, 0));
    config.strategy = StrategyKind::Pct;
    config.pct_depth = 2;
    config.runs_max = 200;
    let host = ConcurrentHost::new(effects.clone(), 3);
    let (runs, verdict) = host.check(&mut setup(config.clone(), 3, true)).unwrap();
    let Verdict::Violated {
        runs: explore_runs,
        run_seed,
        trace,
        strategy,
        ..
    } = verdict
    else {
        panic!("expected PCT to find the race, got {verdict:?}");
    };
    assert_eq!(strategy, Some(StrategyName::Pct));
    assert!(explore_runs <= 50, "found after {explore_runs} runs");
    assert!(runs.len() as u64 > explore_runs, "the violation was shrunk");
    let Verdict::Violated {
        run_seed: replayed_seed,
        trace: replayed_trace,
        ..
    } = replay(&effects, config, &run_seed)
    else {
        panic!("the run seed {run_seed} did not replay the violation");
    };
    assert_eq!(replayed_seed, run_seed);
    assert_eq!(replayed_trace, trace);
}

#[test]
fn sampling_never_says_bounded() {
    let effects = vec![read_then_write("accounts"), read_then_write("accounts")];
    for strategy in [StrategyKind::Random, StrategyKind::Pct] {
        let mut config = config(2, 1, 0);
        config.strategy = strategy;
        config.runs_max = 300;
        let (runs, verdict) = explore(effects.clone(), config, true);
        assert_eq!(runs.len(), 300);
        let Verdict::Incomplete {
            runs: 300,
            reason: IncompleteReason::Runs,
            distinct_schedules,
            ..
        } = verdict
        else {
            panic!("expected INCOMPLETE, got {verdict:?}");
        };
        // The tree has 70 leaves; sampling repeats some of them.
        assert!(
            (10..=70).contains(&distinct_schedules),
            "{strategy:?}: {distinct_schedules}"
        );
    }
}

#[test]
fn shrinking_removes_context_switches_a_random_walk_made() {
    // Four invocations switch back and forth at random; only two of them race.
    let effects = vec![
        read_then_write("accounts"),
        check_then_insert(),
        read_then_write("other"),
        check_then_insert(),
    ];
    let mut config = with_unique(config(4, 0, 0));
    config.strategy = StrategyKind::Random;
    config.runs_max = 500;
    let host = ConcurrentHost::new(effects.clone(), 4);
    let mut check = setup(config.clone(), 4, true);
    let mut first_violation = None;
    while let Some(plan) = check.next_run(0).unwrap() {
        let run = host.play_run(&mut check, plan).unwrap();
        if run.end.violated.is_some() && first_violation.is_none() {
            first_violation = Some(check.run.choices().len());
        }
    }
    let Verdict::Violated {
        run_seed,
        events_kept,
        ..
    } = check.verdict().unwrap()
    else {
        panic!("expected the random walk to find the race");
    };
    let found_with = first_violation.unwrap();
    let schedule = Schedule::decode(&run_seed, &config.events).unwrap();
    assert_eq!(events_kept, vec!["req-2", "req-4"]);
    assert_eq!(schedule.choices.len(), 1, "{run_seed}");
    assert!(found_with > 1, "the walk switched {found_with} times");
    assert!(matches!(
        replay(&effects, config, &run_seed),
        Verdict::Violated { .. }
    ));
}

#[test]
fn a_run_seed_without_choices_replays_with_default_choices() {
    // The four-field form: every point continues the current invocation, so req-1 runs to
    // completion before req-2 is delivered, and the race does not happen.
    let effects = vec![check_then_insert(), check_then_insert()];
    let config = with_unique(config(2, 0, 0));
    let seed = format!("{:016x}:1,2:-:0", fnv1a("checkout"));
    assert!(matches!(
        replay(&effects, config.clone(), &seed),
        Verdict::Held { .. }
    ));
    let racing = format!("{seed}:1.1@1=2.1");
    assert!(matches!(
        replay(&effects, config, &racing),
        Verdict::Violated { .. }
    ));
}

/// The decisions and steps of every run a shard owns.
fn owned_leaves(effects: &[Vec<FakeEffect>], config: &CheckConfig, reduce: bool) -> Vec<String> {
    let host = ConcurrentHost::new(effects.to_vec(), effects.len());
    let mut check = setup(config.clone(), effects.len() as u32, reduce);
    let mut leaves = Vec::new();
    while let Some(plan) = check.next_run(0).unwrap() {
        let run = host.play_run(&mut check, plan).unwrap();
        if check.last_run_owned() {
            leaves.push(format!("{:?} {:?}", run.steps, run.decisions));
        }
    }
    let verdict = check.verdict().unwrap();
    let Verdict::Bounded { shard, .. } = verdict else {
        panic!("expected BOUNDED, got {verdict:?}");
    };
    assert_eq!(shard, config.shard);
    leaves
}

#[test]
fn shards_split_the_tree_exactly() {
    let effects = vec![read_then_write("accounts"), check_then_insert()];
    for (faults, reduce) in [(1, false), (2, false), (1, true)] {
        let whole: BTreeSet<String> = owned_leaves(&effects, &config(2, faults, 1), reduce)
            .into_iter()
            .collect();
        for count in [2, 3, 5] {
            let mut union = BTreeSet::new();
            let mut verdicts = Vec::new();
            for index in 0..count {
                let mut config = config(2, faults, 1);
                config.shard = Some(Shard { index, count });
                let leaves = owned_leaves(&effects, &config, reduce);
                assert!(!leaves.is_empty() || count > 2);
                for leaf in leaves {
                    assert!(union.insert(leaf), "a leaf owned twice");
                }
                verdicts.push(Verdict::Bounded {
                    runs: 1,
                    strategy: StrategyName::Exhaustive,
                    shard: config.shard,
                });
            }
            if reduce {
                // Reduction below the split depth may explore more than the unsharded
                // search, never less.
                assert!(union.is_superset(&whole), "{faults} faults, {count} shards");
            } else {
                assert_eq!(union, whole, "{faults} faults, {count} shards");
            }
            assert!(matches!(
                crate::shard::merge_verdicts(&verdicts).unwrap(),
                Verdict::Bounded { shard: None, .. }
            ));
        }
    }
}

#[test]
fn auto_switches_to_pct_when_the_tree_is_too_large() {
    let effects = vec![
        read_then_write("accounts"),
        read_then_write("accounts"),
        read_then_write("accounts"),
    ];
    // A tree of 1,120 runs, explored with a budget of 30: far more than it covers.
    let mut config = config(3, 2, 0);
    config.strategy = StrategyKind::Auto;
    config.runs_max = 30;
    let (runs, verdict) = explore(effects.clone(), config.clone(), true);
    assert_eq!(runs.len(), 30);
    let Verdict::Incomplete {
        strategy: StrategyName::Pct,
        switched_after_runs: Some(switched),
        distinct_schedules,
        ..
    } = verdict
    else {
        panic!("expected auto to switch to PCT, got {verdict:?}");
    };
    // Judged once two thirds of the runs are spent.
    assert_eq!(switched, 20);
    assert!(distinct_schedules > switched, "{distinct_schedules}");
    // A tree that fits stays exhaustive and is BOUNDED.
    config.runs_max = 100_000;
    let small = vec![read_then_write("accounts"), read_then_write("other")];
    let (_, verdict) = explore(
        small,
        {
            let mut c = config.clone();
            c.events.truncate(2);
            c
        },
        true,
    );
    assert!(matches!(
        verdict,
        Verdict::Bounded {
            strategy: StrategyName::Exhaustive,
            ..
        }
    ));
}

#[test]
fn a_violation_found_after_auto_switched_says_so() {
    // The race of the first two deliveries needs both checks before either insert, which
    // depth-first search reaches only after the later deliveries' orders: in a budget of 40
    // runs, auto judges the tree too large at 27 and PCT finds the race.
    let effects = vec![
        check_then_insert(),
        check_then_insert(),
        read_then_write("accounts"),
        read_then_write("accounts"),
    ];
    let mut auto = with_unique(config(4, 2, 0));
    auto.strategy = StrategyKind::Auto;
    auto.runs_max = 40;
    let (_, verdict) = explore(effects.clone(), auto, true);
    let Verdict::Violated {
        strategy: Some(StrategyName::Pct),
        switched_after_runs: Some(switched),
        runs,
        ..
    } = verdict
    else {
        panic!("expected PCT to find the race after the switch, got {verdict:?}");
    };
    assert_eq!(switched, 27);
    assert!(switched < runs, "{switched} of {runs}");
    // Found before any switch, the verdict says none.
    let mut exhaustive = with_unique(config(2, 0, 0));
    exhaustive.strategy = StrategyKind::Auto;
    let (_, verdict) = explore(effects[..2].to_vec(), exhaustive, true);
    assert!(
        matches!(
            verdict,
            Verdict::Violated {
                strategy: Some(StrategyName::Exhaustive),
                switched_after_runs: None,
                ..
            }
        ),
        "{verdict:?}"
    );
}

#[test]
fn concurrency_misuse_is_reported() {
    let effects = vec![check_then_insert(), check_then_insert()];
    // choose without concurrency.
    let mut single = setup(config(2, 0, 0), 1, true);
    single.next_run(0).unwrap();
    let option = StepOption {
        label: "deliver req-1#1".into(),
        invocation: Some("req-1#1".into()),
        effect: None,
        footprint: vec![],
        answer: false,
    };
    assert!(single
        .choose(std::slice::from_ref(&option))
        .unwrap_err()
        .message()
        .contains("maxConcurrentInvocations is 1"));
    // decide without choose.
    let mut concurrent = setup(config(2, 0, 0), 2, true);
    concurrent.next_run(0).unwrap();
    assert!(concurrent
        .decide("req-1#1", 0, "D1:DB check", false)
        .unwrap_err()
        .message()
        .contains("call choose before every step"));
    // decide for another step than the one chosen.
    let mut other = setup(config(2, 0, 0), 2, true);
    other.next_run(0).unwrap();
    let effect = StepOption {
        label: "req-1#1 effect #0 (D1:DB check)".into(),
        invocation: Some("req-1#1".into()),
        effect: Some(0),
        footprint: vec![],
        answer: false,
    };
    other.choose(&[effect]).unwrap();
    assert!(other
        .decide("req-2#1", 0, "D1:DB check", false)
        .unwrap_err()
        .message()
        .contains("but the step chosen was req-1#1 effect #0"));
    let _ = effects;
}

#[test]
fn time_is_causal_with_concurrent_invocations() {
    // Two invocations on different tables: in every one of the 10 interleavings each step runs
    // at the same virtual time, so `Date.now()` cannot tell them apart.
    let effects = vec![read_then_write("accounts"), read_then_write("other")];
    let (runs, _) = explore(effects, config(2, 0, 0), false);
    assert_eq!(runs.len(), 10);
    let timings: BTreeSet<Vec<String>> = runs
        .iter()
        .map(|run| {
            let mut steps = run.steps.clone();
            steps.sort();
            steps
        })
        .collect();
    assert_eq!(timings.len(), 1, "{timings:?}");
    // The two requests arrive together, at the same time (an arrival moves no clock), and each
    // invocation's steps come one after the other.
    let timing = timings.into_iter().next().unwrap();
    assert!(
        timing.contains(&"deliver req-1#1 at 0".to_string())
            && timing.contains(&"deliver req-2#1 at 0".to_string()),
        "{timing:?}"
    );
    assert!(
        timing.contains(&"req-2#1 effect #1 (D1:DB write) at 2".to_string()),
        "{timing:?}"
    );
}

/// `auto` keeps a depth-first search the budget covers, though its progress (held back by the
/// first subtrees, the largest under partial-order reduction) makes the tree look bigger, and
/// restarts as PCT on a tree clearly beyond the budget.
#[test]
fn auto_keeps_searching_a_tree_the_budget_covers_and_samples_one_it_cannot() {
    let effects = vec![
        read_then_write("accounts"),
        read_then_write("accounts"),
        read_then_write("accounts"),
    ];
    let (runs, exhaustive) = explore(effects.clone(), config(3, 1, 0), true);
    assert!(
        matches!(exhaustive, Verdict::Bounded { .. }),
        "{exhaustive:?}"
    );
    let size = runs.len() as u64;
    assert!(size >= 100, "a tree of {size} runs is too small to judge");
    let auto = |runs_max: u64| {
        let mut config = config(3, 1, 0);
        config.strategy = StrategyKind::Auto;
        config.runs_max = runs_max;
        explore(effects.clone(), config, true).1
    };
    let covered = auto(size);
    assert!(
        matches!(covered, Verdict::Bounded { runs, .. } if runs == size),
        "{covered:?}"
    );
    let beyond = auto(size / 10);
    assert!(
        matches!(
            beyond,
            Verdict::Incomplete {
                strategy: StrategyName::Pct,
                switched_after_runs: Some(_),
                ..
            }
        ),
        "{beyond:?}"
    );
}

#[test]
fn auto_keeps_searching_a_tree_a_little_larger_than_the_budget_covers() {
    // 58 runs with a budget of 43: the depth-first search cannot finish, but sampling the last
    // third would not make it BOUNDED either, and where the budget is time, a run-rate that
    // picks up can still finish it. An estimate of a few times the budget is not far enough.
    let effects = vec![check_then_insert(), check_then_insert()];
    let mut config = config(2, 2, 0);
    config.events.truncate(2);
    let (runs, exhaustive) = explore(effects.clone(), config.clone(), true);
    assert!(
        matches!(exhaustive, Verdict::Bounded { .. }),
        "{exhaustive:?}"
    );
    assert_eq!(runs.len(), 58);
    config.strategy = StrategyKind::Auto;
    config.runs_max = 43;
    let (_, verdict) = explore(effects, config, true);
    assert!(
        matches!(
            verdict,
            Verdict::Incomplete {
                strategy: StrategyName::Exhaustive,
                switched_after_runs: None,
                ..
            }
        ),
        "{verdict:?}"
    );
}

/// A shop that pays from a wallet Worker over a service binding: it checks the purchase is new,
/// asks the wallet for the balance, tells it the new balance (what it read minus the price),
/// and records the purchase. Each call hosts a callee invocation with one D1 statement.
fn shop_over_a_wallet() -> Vec<FakeEffect> {
    vec![
        FakeEffect::sql(
            "D1:DB first",
            "DB",
            "SELECT id FROM purchases WHERE id = 'p-$N'",
        )
        .stop_if_rows(),
        FakeEffect::call(
            "Service:WALLET balance",
            vec![FakeEffect::sql(
                "D1:wallet first",
                "DB",
                "INSERT INTO read_$N SELECT cents FROM balances",
            )],
        ),
        FakeEffect::call(
            "Service:WALLET setBalance",
            vec![FakeEffect::sql(
                "D1:wallet run",
                "DB",
                "UPDATE balances SET cents = (SELECT cents FROM read_$N) - 600",
            )],
        ),
        FakeEffect::sql(
            "D1:DB run",
            "DB",
            "INSERT INTO purchases (id, cents) VALUES ('p-$N', 600)",
        ),
    ]
}

/// A check of two purchases through `shop_over_a_wallet`, whose invariant is that the money
/// spent and the balance left add up to what there was.
fn wallet_check(replay: Option<&str>) -> (CheckConfig, Check) {
    let mut config = config(2, 0, 0);
    config.invariants = vec![InvariantSpec::Conserved {
        name: "no-money-lost".into(),
        db: "DB".into(),
        sql: "SELECT (SELECT cents FROM balances) + \
              (SELECT COALESCE(SUM(cents), 0) FROM purchases)"
            .into(),
    }];
    config.max_concurrent_invocations = 2;
    config.replay = replay.map(str::to_string);
    let mut check = Check::new(config.clone()).unwrap();
    check.d1_open("DB").unwrap();
    check
        .d1_setup(
            "DB",
            "CREATE TABLE balances (cents INTEGER); INSERT INTO balances VALUES (1000);
             CREATE TABLE purchases (id TEXT PRIMARY KEY, cents INTEGER);
             CREATE TABLE read_1 (cents INTEGER); CREATE TABLE read_2 (cents INTEGER);",
        )
        .unwrap();
    check.seal().unwrap();
    (config, check)
}

#[test]
fn shrinking_finds_the_one_context_switch_where_two_were_made() {
    let host = ConcurrentHost::new(vec![shop_over_a_wallet(), shop_over_a_wallet()], 2);
    let seed = format!("{:016x}:1,2:-:0", fnv1a("checkout"));
    let replayed = |choices: &str| {
        let (_, mut check) = wallet_check(Some(&format!("{seed}:{choices}")));
        host.check(&mut check).unwrap().1
    };
    // The search finds the lost update with two switches: deliver req-2 while req-1's
    // setBalance callee waits, then run req-2's balance callee ahead of it. Neither alone
    // races, so dropping switches one at a time keeps both.
    let found = "1.1/2@0=2.1,1.1/2@0=2.1/1@0";
    assert!(matches!(replayed(found), Verdict::Violated { .. }));
    for alone in found.split(',') {
        assert!(matches!(replayed(alone), Verdict::Held { .. }), "{alone}");
    }
    let (config, mut check) = wallet_check(None);
    let mut found_with = None;
    while let Some(plan) = check.next_run(0).unwrap() {
        let run = host.play_run(&mut check, plan).unwrap();
        if run.end.violated.is_some() && found_with.is_none() {
            found_with = Some(Schedule {
                base_seed: check.run.base_seed(),
                events: vec![0, 1],
                faults: vec![],
                redeliveries_max: 0,
                choices: check.run.choices(),
                split_answers: false,
            });
        }
    }
    assert_eq!(
        found_with.unwrap().encode(&config.events),
        format!("{seed}:{found}")
    );
    let Verdict::Violated {
        invariant,
        run_seed,
        shrink_runs,
        ..
    } = check.verdict().unwrap()
    else {
        panic!("expected the lost update");
    };
    assert_eq!(invariant, "no-money-lost");
    // One switch made earlier races as well: deliver req-2 instead of req-1's setBalance call.
    assert_eq!(run_seed, format!("{seed}:1.1@2=2.1"));
    assert!(shrink_runs < 20, "{shrink_runs} shrink runs");
}

/// Explores the check-then-insert race of two requests with `strategy` from base seed `seed`;
/// answers how many context switches the violating run the sampling found made, and the
/// verdict.
fn sample_the_race(strategy: StrategyKind, seed: &str) -> (usize, Verdict) {
    let effects = vec![check_then_insert(), check_then_insert()];
    let mut config = with_unique(config(2, 0, 0));
    config.seed = seed.into();
    config.strategy = strategy;
    config.runs_max = 500;
    let host = ConcurrentHost::new(effects, 2);
    let mut check = setup(config, 2, true);
    let mut found_with = None;
    while let Some(plan) = check.next_run(0).unwrap() {
        let run = host.play_run(&mut check, plan).unwrap();
        if run.end.violated.is_some() && found_with.is_none() {
            found_with = Some(check.run.choices().len());
        }
    }
    (found_with.unwrap_or(0), check.verdict().unwrap())
}

#[test]
fn a_sampled_race_shrinks_to_the_one_switch_it_needs() {
    // A random walk or PCT run that switched back and forth (deliver req-2 before req-1's
    // check, then run req-1's check before req-2's insert) races; so does the one switch
    // "deliver req-2 before req-1's insert", at a point no such run passes through.
    let mut found_with_several = 0;
    for strategy in [StrategyKind::Random, StrategyKind::Pct] {
        for n in 0..20 {
            let seed = format!("seed-{n}");
            let (found_with, verdict) = sample_the_race(strategy, &seed);
            let Verdict::Violated {
                run_seed,
                shrink_runs,
                ..
            } = &verdict
            else {
                panic!("{strategy:?} from {seed}: expected the race, got {verdict:?}");
            };
            let base = format!("{:016x}", fnv1a(&seed));
            assert_eq!(
                run_seed,
                &format!("{base}:1,2:-:0:1.1@1=2.1"),
                "{strategy:?} from {seed}, found with {found_with} switches"
            );
            assert!(
                *shrink_runs <= 30,
                "{strategy:?} from {seed}: {shrink_runs}"
            );
            found_with_several += usize::from(found_with > 1);
            // The same violation from the same seed shrinks the same way.
            assert_eq!(sample_the_race(strategy, &seed).1, verdict);
        }
    }
    assert!(found_with_several >= 20, "{found_with_several}");
}

/// A hold and its confirmation (req-2: `x` becomes 2, then 3) and a reader that records what it
/// sees (req-1): the invariant is that no reader saw a hold, so req-1's read must come between
/// req-2's two writes. Clients resend once, and one fault a run is allowed.
fn hold_and_reader() -> (Vec<Vec<FakeEffect>>, CheckConfig) {
    let effects = vec![
        vec![FakeEffect::sql(
            "D1:DB read",
            "DB",
            "INSERT INTO log1 SELECT v FROM x",
        )],
        vec![
            FakeEffect::sql("D1:DB hold", "DB", "UPDATE x SET v = 2"),
            FakeEffect::sql("D1:DB confirm", "DB", "UPDATE x SET v = 3"),
        ],
    ];
    let mut config = config(2, 1, 1);
    config.invariants = vec![InvariantSpec::Query {
        name: "never-saw-a-hold".into(),
        db: "DB".into(),
        sql: "SELECT v FROM log1 WHERE v = 2".into(),
    }];
    (effects, config)
}

/// Samples `hold_and_reader` with `strategy` from base seed `seed`; answers whether the
/// violating run the sampling found had a fault, and the verdict.
fn sample_the_hold(strategy: StrategyKind, seed: &str) -> (bool, Verdict) {
    let (effects, mut config) = hold_and_reader();
    config.seed = seed.into();
    config.strategy = strategy;
    config.runs_max = 500;
    let mut host = ConcurrentHost::new(effects, 2);
    host.retries = 1;
    let mut check = setup(config, 2, true);
    let mut found_with_fault = None;
    while let Some(plan) = check.next_run(0).unwrap() {
        let run = host.play_run(&mut check, plan).unwrap();
        if run.end.violated.is_some() && found_with_fault.is_none() {
            found_with_fault = Some(!check.run.faults().is_empty());
        }
    }
    (found_with_fault.unwrap_or(false), check.verdict().unwrap())
}

#[test]
fn a_crash_that_stands_in_for_a_context_switch_shrinks_to_the_race() {
    // A crash before req-2's confirmation kills it after its hold; the next step is then
    // req-1's read, the first live invocation's, with no switch. One switch and a crash break
    // the invariant, and the race alone needs two switches: deliver req-2 before req-1's
    // read, then read instead of confirming. Removing the crash alone, or a switch alone,
    // keeps the invariant.
    let (effects, config) = hold_and_reader();
    let replayed = |schedule: &str| {
        let mut host = ConcurrentHost::new(effects.clone(), 2);
        host.retries = 1;
        let mut config = config.clone();
        config.replay = Some(format!("{:016x}:1,2:{schedule}", fnv1a("seed")));
        host.check(&mut setup(config, 2, true)).unwrap().1
    };
    let race = "-:0:1.1@0=2.1,2.1@1=1.1@0";
    assert!(matches!(
        replayed("B2.1@1:1:1.1@0=2.1"),
        Verdict::Violated { .. }
    ));
    assert!(matches!(replayed("-:0:1.1@0=2.1"), Verdict::Held { .. }));
    assert!(matches!(replayed(race), Verdict::Violated { .. }));
    for alone in race[4..].split(',') {
        assert!(matches!(
            replayed(&format!("-:0:{alone}")),
            Verdict::Held { .. }
        ));
    }
    let mut found_with_fault = 0;
    for strategy in [StrategyKind::Random, StrategyKind::Pct] {
        for n in 0..20 {
            let seed = format!("seed-{n}");
            let (with_fault, verdict) = sample_the_hold(strategy, &seed);
            let Verdict::Violated {
                run_seed, faults, ..
            } = &verdict
            else {
                panic!("{strategy:?} from {seed}: expected the race, got {verdict:?}");
            };
            let base = format!("{:016x}", fnv1a(&seed));
            assert_eq!(
                run_seed,
                &format!("{base}:1,2:{race}"),
                "{strategy:?} from {seed}, found with a fault: {with_fault}"
            );
            assert_eq!(faults, &[]);
            found_with_fault += usize::from(with_fault);
            // The same violation from the same seed shrinks the same way.
            assert_eq!(sample_the_hold(strategy, &seed).1, verdict);
        }
    }
    assert!(found_with_fault >= 10, "{found_with_fault}");
}
