//! The whole check state machine, driven by the simulated host of `testing.rs`.

use std::cell::Cell;
use std::collections::BTreeSet;

use super::*;
use crate::config::InvariantSpec;
use crate::run::CLOCK_START_MS;
use crate::testing::{config, FakeEffect, FakeHost, FakeWork};

fn check(config: CheckConfig) -> Check {
    Check::new(config).unwrap()
}

fn bounded(runs: u64) -> Verdict {
    Verdict::Bounded {
        runs,
        strategy: StrategyName::Exhaustive,
        shard: None,
    }
}

fn binomial(n: u64, k: u64) -> u64 {
    (0..k).fold(1, |acc, i| acc * (n - i) / (i + 1))
}

#[test]
fn explores_small_trees_exactly() {
    let effects = [
        FakeEffect::pure("D1:DB run"),
        FakeEffect::pure("Service:PAYMENTS charge"),
    ];
    for events in 1..=3u64 {
        for faults in 0..=3u32 {
            let host = FakeHost::uniform(events as usize, &effects, 0);
            let (runs, verdict) = host
                .check(&mut check(config(events as usize, faults, 0)))
                .unwrap();
            // Without redeliveries an event takes at most one fault, at one of its 2 effects,
            // of one of 2 kinds.
            let expected: u64 = (0..=u64::from(faults).min(events))
                .map(|j| binomial(events, j) * 4u64.pow(j as u32))
                .sum();
            assert_eq!(
                runs.len() as u64,
                expected,
                "{events} events, {faults} faults"
            );
            assert_eq!(verdict, bounded(expected));
            let distinct: BTreeSet<String> =
                runs.iter().map(|r| format!("{:?}", r.decisions)).collect();
            assert_eq!(
                distinct.len(),
                runs.len(),
                "every run is a different schedule"
            );
        }
    }
}

#[test]
fn no_faults_means_one_run() {
    let host = FakeHost::uniform(3, &[FakeEffect::pure("D1:DB run")], 2);
    let (runs, verdict) = host.check(&mut check(config(3, 0, 2))).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(verdict, bounded(1));
}

#[test]
fn redeliveries_open_new_branch_points() {
    let host = FakeHost::uniform(1, &[FakeEffect::pure("Service:PAYMENTS charge")], 5);
    // One fault: proceed, or a crash of either kind whose redelivery proceeds.
    let (runs, _) = host.check(&mut check(config(1, 1, 1))).unwrap();
    assert_eq!(runs.len(), 3);
    // Two faults: the redelivery after a crash branches too (3 ways), and the delivery after
    // two crashes is refused with one redelivery allowed.
    let (runs, _) = host.check(&mut check(config(1, 2, 1))).unwrap();
    assert_eq!(runs.len(), 7);
}

#[test]
fn respects_the_fault_budget() {
    let effects = [FakeEffect::pure("a"), FakeEffect::pure("b")];
    let host = FakeHost::uniform(3, &effects, 3);
    for faults in 0..=2 {
        let (runs, _) = host.check(&mut check(config(3, faults, 3))).unwrap();
        assert!(runs.len() > 1 || faults == 0);
        for run in &runs {
            let fired = run
                .decisions
                .iter()
                .filter(|(_, _, d)| *d != Decision::Proceed)
                .count();
            assert!(fired <= faults as usize, "{fired} faults in {run:?}");
        }
        let most = runs
            .iter()
            .map(|r| {
                r.decisions
                    .iter()
                    .filter(|d| d.2 != Decision::Proceed)
                    .count()
            })
            .max();
        assert_eq!(most, Some(faults as usize));
    }
}

#[test]
fn varies_the_deepest_decision_first() {
    let effects = [FakeEffect::pure("a"), FakeEffect::pure("b")];
    let host = FakeHost::uniform(2, &effects, 0);
    let (runs, _) = host.check(&mut check(config(2, 1, 0))).unwrap();
    assert!(runs[0].decisions.iter().all(|d| d.2 == Decision::Proceed));
    let faulted: Vec<_> = runs[1]
        .decisions
        .iter()
        .filter(|d| d.2 != Decision::Proceed)
        .collect();
    assert_eq!(
        faulted,
        vec![&("req-2#1".to_string(), 1, Decision::CrashBefore)]
    );
    // The last run crashes the first effect of the first event, after the first event's other
    // alternatives and every alternative of the second event.
    let last = runs.last().unwrap();
    assert_eq!(
        last.decisions[0],
        ("req-1#1".to_string(), 0, Decision::CrashAfter)
    );
}

/// The checkout example in miniature: only req-2's charge is not idempotent, so the invariant
/// breaks exactly when req-2's charge happens, its invocation dies, and the client resends.
fn checkout(config: CheckConfig) -> (Check, FakeHost) {
    let mut config = config;
    config.invariants = vec![InvariantSpec::Unique {
        name: "one-charge-per-order".into(),
        db: "payments/DB".into(),
        table: "charges".into(),
        columns: vec!["order_id".into()],
    }];
    let mut check = Check::new(config).unwrap();
    check.d1_open("payments/DB").unwrap();
    check
        .d1_setup(
            "payments/DB",
            "CREATE TABLE charges (id INTEGER PRIMARY KEY, order_id TEXT NOT NULL);",
        )
        .unwrap();
    check.seal().unwrap();
    let idempotent = FakeEffect::sql(
        "Service:PAYMENTS charge",
        "payments/DB",
        "INSERT INTO charges (order_id) SELECT 'o-$N' \
         WHERE NOT EXISTS (SELECT 1 FROM charges WHERE order_id = 'o-$N')",
    );
    let naive = FakeEffect::sql(
        "Service:PAYMENTS charge",
        "payments/DB",
        "INSERT INTO charges (order_id) VALUES ('o-$N')",
    );
    let host = FakeHost {
        effects: vec![vec![idempotent.clone()], vec![naive], vec![idempotent]],
        retries: 3,
        platform: Vec::new(),
        invariant: None,
    };
    (check, host)
}

#[test]
fn finds_and_shrinks_the_violation() {
    let (mut check, host) = checkout(config(3, 1, 3));
    let (runs, verdict) = host.check(&mut check).unwrap();
    let Verdict::Violated {
        runs: explore_runs,
        shrink_runs,
        invariant,
        message,
        run_seed,
        events_kept,
        faults,
        trace,
        strategy,
        ..
    } = verdict
    else {
        panic!("expected a violation, got {verdict:?}");
    };
    assert_eq!(invariant, "one-charge-per-order");
    assert_eq!(
        strategy, None,
        "a check without concurrency options reports as before"
    );
    assert_eq!(
        message,
        "2 rows of charges in D1:payments/DB share order_id = \"o-2\""
    );
    assert_eq!(events_kept, vec!["req-2"]);
    assert_eq!(
        faults,
        vec![FaultReport {
            kind: "crash_after".into(),
            invocation: "req-2#1".into(),
            effect: 0,
            label: "Service:PAYMENTS charge".into(),
        }]
    );
    assert_eq!(run_seed, format!("{:016x}:2:A2.1@0:1", fnv1a("checkout")));
    assert_eq!(
        trace,
        vec![
            "req-2#1 effect #0 Service:PAYMENTS charge: crash_after",
            "  D1 payments/DB: INSERT INTO charges (order_id) VALUES ('o-2') -> 1 changed",
            "redeliver req-2#2",
            "req-2#2 effect #0 Service:PAYMENTS charge: proceed",
            "  D1 payments/DB: INSERT INTO charges (order_id) VALUES ('o-2') -> 1 changed",
            // What the unique() invariant read: the rows that break it.
            "  D1 payments/DB: SELECT \"order_id\", COUNT(*) FROM \"charges\" WHERE \"order_id\" IS NOT NULL \
             GROUP BY \"order_id\" HAVING COUNT(*) > 1 ORDER BY \"order_id\" LIMIT 1 -> 1 row (\"o-2\", 2)",
        ]
    );
    // Deepest first: req-3's faults are tried before req-2's, and the violation is the second
    // alternative at req-2's charge.
    let explored: Vec<_> = runs
        .iter()
        .filter(|r| r.plan.phase == Phase::Explore)
        .collect();
    assert_eq!(explored.len() as u64, explore_runs);
    assert_eq!(explore_runs, 5);
    assert!(explored.last().unwrap().end.violated.is_some());
    let shrunk = runs.len() as u64 - explore_runs;
    assert_eq!(shrunk, shrink_runs);
    assert!(runs[explore_runs as usize..]
        .iter()
        .all(|r| r.plan.phase == Phase::Shrink));
    // Shrinking stopped once nothing could go: verify, three event removals, one fault
    // removal, one redelivery count.
    assert!(shrink_runs <= 8, "{shrink_runs} shrink runs");
}

#[test]
fn the_run_seed_replays_the_shrunk_run() {
    let (mut first, host) = checkout(config(3, 1, 3));
    let (_, verdict) = host.check(&mut first).unwrap();
    let Verdict::Violated {
        run_seed, trace, ..
    } = verdict.clone()
    else {
        panic!("expected a violation");
    };
    let mut replay_config = config(3, 1, 3);
    replay_config.replay = Some(run_seed.clone());
    let (mut again, host) = checkout(replay_config);
    let (runs, replayed) = host.check(&mut again).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].plan.phase, Phase::Replay);
    let Verdict::Violated {
        runs: 1,
        shrink_runs: 0,
        run_seed: replayed_seed,
        trace: replayed_trace,
        faults,
        ..
    } = replayed
    else {
        panic!("expected the replay to violate, got {replayed:?}");
    };
    assert_eq!(replayed_seed, run_seed);
    assert_eq!(replayed_trace, trace);
    assert_eq!(faults[0].label, "Service:PAYMENTS charge");

    // Without the fault the same events hold.
    let mut held_config = config(3, 1, 3);
    let faultless = format!("{:016x}:2:-:1", fnv1a("checkout"));
    held_config.replay = Some(faultless.clone());
    let (mut held, host) = checkout(held_config);
    let (_, verdict) = host.check(&mut held).unwrap();
    assert_eq!(
        verdict,
        Verdict::Held {
            runs: 1,
            run_seed: faultless,
            trace: vec![
                "req-2#1 effect #0 Service:PAYMENTS charge: proceed".into(),
                "  D1 payments/DB: INSERT INTO charges (order_id) VALUES ('o-2') -> 1 changed"
                    .into(),
                "  D1 payments/DB: SELECT \"order_id\", COUNT(*) FROM \"charges\" WHERE \"order_id\" IS NOT \
                 NULL GROUP BY \"order_id\" HAVING COUNT(*) > 1 ORDER BY \"order_id\" LIMIT 1 -> 0 rows"
                    .into(),
            ],
        }
    );
}

#[test]
fn a_malformed_run_seed_is_a_construction_error() {
    let mut bad = config(2, 1, 1);
    bad.replay = Some("nope".into());
    let error = Check::new(bad).err().unwrap();
    assert!(error
        .message()
        .starts_with("run seed 'nope' is malformed: "));
}

#[test]
fn detects_nondeterminism() {
    let mut check = check(config(1, 1, 0));
    let calls = Cell::new(0);
    let mut outcome = Ok(());
    while let Some(_plan) = check.next_run(0).unwrap() {
        calls.set(calls.get() + 1);
        // The Worker's first effect depends on something outside the simulation.
        let label = if calls.get() == 1 {
            "D1:DB run"
        } else {
            "KV:CACHE get"
        };
        match check.decide("req-1#1", 0, label, false) {
            Ok(_) => {
                check.end_run(None).unwrap();
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    let error = outcome.unwrap_err();
    assert_eq!(
        error.message(),
        format!(
            "nondeterminism: at decision 1 the run reached req-1#1 effect #0 (KV:CACHE get) but \
             an earlier run with the same choices reached req-1#1 effect #0 (D1:DB run); {}",
            crate::error::OUTSIDE
        )
    );
    // The check stays broken.
    assert_eq!(check.next_run(0).unwrap_err(), error);
}

#[test]
fn stops_at_the_budget_and_at_runs_max() {
    let host = FakeHost::uniform(2, &[FakeEffect::pure("a")], 0);
    let mut budgeted = check(config(2, 2, 0));
    let plan = budgeted.next_run(0).unwrap().unwrap();
    host.play_run(&mut budgeted, plan).unwrap();
    assert_eq!(budgeted.next_run(60_000).unwrap(), None);
    assert_eq!(
        budgeted.verdict().unwrap(),
        Verdict::Incomplete {
            runs: 1,
            reason: IncompleteReason::Budget,
            strategy: StrategyName::Exhaustive,
            distinct_schedules: 1,
            shard: None,
            switched_after_runs: None,
        }
    );

    let mut limited_config = config(2, 2, 0);
    limited_config.runs_max = 4;
    let (runs, verdict) = host.check(&mut check(limited_config)).unwrap();
    assert_eq!(runs.len(), 4);
    assert_eq!(
        verdict,
        Verdict::Incomplete {
            runs: 4,
            reason: IncompleteReason::Runs,
            strategy: StrategyName::Exhaustive,
            distinct_schedules: 4,
            shard: None,
            switched_after_runs: None,
        }
    );
}

#[test]
fn clock_and_random_streams_are_per_run() {
    let mut check = check(config(1, 1, 0));
    let mut seen = Vec::new();
    while let Some(_plan) = check.next_run(0).unwrap() {
        assert_eq!(check.now_ms(), CLOCK_START_MS);
        let mut bytes = [0u8; 16];
        check.fill_random("req-1#1", &mut bytes);
        let decision = check.decide("req-1#1", 0, "D1:DB run", false).unwrap();
        assert_eq!(check.now_ms(), CLOCK_START_MS + 1);
        if decision == Decision::Proceed {
            check.decide("req-1#1", 1, "D1:DB run", false).unwrap();
            assert_eq!(check.now_ms(), CLOCK_START_MS + 2);
        }
        check.end_run(None).unwrap();
        seen.push(bytes);
    }
    assert!(seen.len() > 1);
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn misuse_is_reported() {
    let mut check = check(config(1, 1, 1));
    assert!(check.decide("req-1#1", 0, "a", false).is_err());
    assert!(check.end_run(None).is_err());
    assert!(check.verdict().is_err());
    check.next_run(0).unwrap().unwrap();
    assert!(check.next_run(0).is_err());
    assert!(check.decide("req-1", 0, "a", false).is_err());
    assert!(check.decide("req-1#0", 0, "a", false).is_err());
    assert!(check.decide("", 0, "a", false).is_err());
    assert!(check.redeliver(0, 1).is_err());
    assert!(check.redeliver(0, 2).unwrap());
    assert!(!check.redeliver(0, 3).unwrap());
}

#[test]
fn transient_effects_have_four_alternatives() {
    let effects = [
        FakeEffect::pure("KV:CACHE put").transient(),
        FakeEffect::pure("Service:PAYMENTS charge"),
    ];
    let host = FakeHost::uniform(1, &effects, 0);
    // One fault: at the put, proceed (then 3 ways at the charge), crash before, crash after,
    // or transient (the invocation lives on; the charge no longer branches).
    let (runs, verdict) = host.check(&mut check(config(1, 1, 0))).unwrap();
    assert_eq!(runs.len(), 6);
    assert_eq!(verdict, bounded(6));
    // Two faults: after the transient error the charge branches 3 ways too.
    let (runs, _) = host.check(&mut check(config(1, 2, 0))).unwrap();
    assert_eq!(runs.len(), 8);
    let transient = runs
        .iter()
        .filter(|r| r.decisions.iter().any(|d| d.2 == Decision::Transient))
        .count();
    assert_eq!(transient, 3);
    // Transient faults count against the fault budget like crashes.
    assert!(runs.iter().all(|r| r
        .decisions
        .iter()
        .filter(|d| d.2 != Decision::Proceed)
        .count()
        <= 2));
}

#[test]
fn lost_responses_are_a_fifth_alternative_where_the_host_offers_them() {
    let effects = [
        FakeEffect::pure("D1:DB run").lost(),
        FakeEffect::pure("Service:PAYMENTS charge"),
    ];
    let host = FakeHost::uniform(1, &effects, 0);
    // One fault: at the run, proceed (then 3 ways at the charge), crash before, crash after,
    // transient or lost response (the invocation lives on; the charge no longer branches).
    let (runs, verdict) = host.check(&mut check(config(1, 1, 0))).unwrap();
    assert_eq!(runs.len(), 7);
    assert_eq!(verdict, bounded(7));
    let lost = runs
        .iter()
        .filter(|r| r.decisions.iter().any(|d| d.2 == Decision::LostResponse))
        .count();
    assert_eq!(lost, 1);
}

/// The state after the one run `seed` names, of a Worker whose only effect inserts a row.
fn rows_after(seed: &str) -> (Value, Vec<String>) {
    let mut config = config(1, 1, 0);
    config.replay = Some(seed.to_string());
    let mut check = Check::new(config).unwrap();
    check.d1_open("DB").unwrap();
    check.d1_setup("DB", "CREATE TABLE t (x);").unwrap();
    check.seal().unwrap();
    let host = FakeHost::uniform(
        1,
        &[FakeEffect::sql("D1:DB run", "DB", "INSERT INTO t VALUES (1)").lost()],
        0,
    );
    let plan = check.next_run(0).unwrap().expect("the replayed run");
    host.play_run(&mut check, plan).unwrap();
    let rows = check
        .d1_run("DB", "SELECT count(*) FROM t", &[])
        .unwrap()
        .rows;
    (rows[0][0].clone(), check.trace_lines().to_vec())
}

#[test]
fn a_lost_response_lets_the_effect_happen_and_a_transient_error_does_not() {
    let base = format!("{:016x}", fnv1a("checkout"));
    let (lost, trace) = rows_after(&format!("{base}:1:L1.1@0:0"));
    assert_eq!(lost, Value::Integer(1));
    assert!(trace.contains(&"req-1#1 effect #0 D1:DB run: lost_response".to_string()));
    let (transient, _) = rows_after(&format!("{base}:1:T1.1@0:0"));
    assert_eq!(transient, Value::Integer(0));
}

/// A Worker that records an order, then sends it on a queue and ignores the send's transient
/// error: the order is never sent. A crash is harmless, the client's resend sends it.
fn lost_sends(config: CheckConfig) -> (Check, FakeHost) {
    let mut config = config;
    config.invariants = vec![InvariantSpec::Query {
        name: "every-order-sent".into(),
        db: "DB".into(),
        sql: "SELECT id FROM orders WHERE id NOT IN (SELECT id FROM sent) ORDER BY id".into(),
    }];
    let mut check = Check::new(config).unwrap();
    check.d1_open("DB").unwrap();
    check
        .d1_setup(
            "DB",
            "CREATE TABLE orders (id TEXT PRIMARY KEY); CREATE TABLE sent (id TEXT);",
        )
        .unwrap();
    check.seal().unwrap();
    let effects = [
        FakeEffect::sql(
            "D1:DB run",
            "DB",
            "INSERT OR IGNORE INTO orders VALUES ('o-$N')",
        ),
        FakeEffect::sql("Queue:JOBS send", "DB", "INSERT INTO sent VALUES ('o-$N')").transient(),
    ];
    (check, FakeHost::uniform(2, &effects, 1))
}

#[test]
fn transient_faults_are_found_shrunk_and_replayed() {
    let (mut first, host) = lost_sends(config(2, 1, 1));
    let (_, verdict) = host.check(&mut first).unwrap();
    let Verdict::Violated {
        invariant,
        message,
        run_seed,
        faults,
        trace,
        ..
    } = verdict
    else {
        panic!("expected a violation, got {verdict:?}");
    };
    assert_eq!(invariant, "every-order-sent");
    assert_eq!(message, "1 row from D1:DB breaks it: (id = \"o-2\")");
    assert_eq!(run_seed, format!("{:016x}:2:T2.1@1:0", fnv1a("checkout")));
    assert_eq!(faults[0].kind, "transient_error");
    assert_eq!(
        trace[2],
        "req-2#1 effect #1 Queue:JOBS send: transient_error"
    );
    // The trace ends with what the invariant's own query read: the row that breaks it.
    assert_eq!(
        trace.last().map(String::as_str),
        Some(
            "  D1 DB: SELECT id FROM orders WHERE id NOT IN (SELECT id FROM sent) ORDER BY id -> 1 row (\"o-2\")"
        )
    );

    let mut replay_config = config(2, 1, 1);
    replay_config.replay = Some(run_seed.clone());
    let (mut again, host) = lost_sends(replay_config);
    let (_, replayed) = host.check(&mut again).unwrap();
    let Verdict::Violated {
        run_seed: replayed_seed,
        trace: replayed_trace,
        ..
    } = replayed
    else {
        panic!("expected the replay to violate, got {replayed:?}");
    };
    assert_eq!(replayed_seed, run_seed);
    assert_eq!(replayed_trace, trace);
}

/// The checkout miniature with its invariant evaluated by the host instead of the engine.
fn host_checked_checkout(config: CheckConfig) -> (Check, FakeHost) {
    let (_, mut host) = checkout(config.clone());
    // The same databases, without the engine's invariant.
    let mut check = Check::new(config).unwrap();
    check.d1_open("payments/DB").unwrap();
    check
        .d1_setup(
            "payments/DB",
            "CREATE TABLE charges (id INTEGER PRIMARY KEY, order_id TEXT NOT NULL);",
        )
        .unwrap();
    check.seal().unwrap();
    host.invariant = Some(|check: &mut Check| {
        let result = check
            .d1_run(
                "payments/DB",
                "SELECT order_id, COUNT(*) FROM charges GROUP BY order_id HAVING COUNT(*) > 1",
                &[],
            )
            .unwrap();
        result.rows.first().map(|row| Violation {
            invariant: "host-one-charge".into(),
            message: format!("{} charged twice", row[0]),
        })
    });
    (check, host)
}

#[test]
fn a_host_violation_shrinks_like_an_engine_one() {
    let (mut check, host) = host_checked_checkout(config(3, 1, 3));
    let (_, verdict) = host.check(&mut check).unwrap();
    let Verdict::Violated {
        invariant,
        message,
        run_seed,
        events_kept,
        ..
    } = verdict
    else {
        panic!("expected a violation, got {verdict:?}");
    };
    assert_eq!(invariant, "host-one-charge");
    assert_eq!(message, "\"o-2\" charged twice");
    assert_eq!(events_kept, vec!["req-2"]);
    assert_eq!(run_seed, format!("{:016x}:2:A2.1@0:1", fnv1a("checkout")));
}

#[test]
fn the_engine_invariants_come_before_the_host_ones() {
    let (mut check, _) = checkout(config(1, 0, 0));
    check.next_run(0).unwrap().unwrap();
    check
        .d1_run(
            "payments/DB",
            "INSERT INTO charges (order_id) VALUES ('o-1'), ('o-1')",
            &[],
        )
        .unwrap();
    let host = Violation {
        invariant: "host".into(),
        message: "m".into(),
    };
    let end = check.end_run(Some(host.clone())).unwrap();
    assert_eq!(
        end.violated.map(|v| v.invariant),
        Some("one-charge-per-order".to_string())
    );
    let (mut check, _) = checkout(config(1, 0, 0));
    check.next_run(0).unwrap().unwrap();
    assert_eq!(
        check.end_run(Some(host.clone())).unwrap().violated,
        Some(host)
    );
}

/// A queue consumer that records a job and then acknowledges it; a death before the ack makes
/// the platform redeliver the batch, which records the job again.
fn double_processing(config: CheckConfig) -> (Check, FakeHost) {
    let mut config = config;
    config.invariants = vec![InvariantSpec::Unique {
        name: "each-job-once".into(),
        db: "DB".into(),
        table: "processed".into(),
        columns: vec!["job".into()],
    }];
    let mut check = Check::new(config).unwrap();
    check.d1_open("DB").unwrap();
    check
        .d1_setup("DB", "CREATE TABLE processed (job TEXT)")
        .unwrap();
    check.seal().unwrap();
    let mut host = FakeHost::uniform(1, &[FakeEffect::pure("Service:API get")], 0);
    host.platform = vec![FakeWork {
        name: "batch-1".into(),
        effects: vec![
            FakeEffect::sql("D1:DB run", "DB", "INSERT INTO processed VALUES ('j-1')"),
            FakeEffect::pure("Queue:JOBS ack"),
        ],
        retries: 3,
    }];
    (check, host)
}

#[test]
fn faults_on_platform_invocations_shrink_and_replay() {
    let (mut first, host) = double_processing(config(1, 1, 2));
    let (_, verdict) = host.check(&mut first).unwrap();
    let Verdict::Violated {
        run_seed,
        events_kept,
        faults,
        trace,
        ..
    } = verdict
    else {
        panic!("expected a violation, got {verdict:?}");
    };
    // The fault on the batch is all the violation needs; the one event stays, since shrinking
    // keeps at least one (platform work comes from events).
    assert_eq!(events_kept, vec!["req-1".to_string()]);
    assert_eq!(faults.len(), 1);
    assert_eq!(faults[0].invocation, "batch-1#1");
    assert!(run_seed.contains(":B~batch-1#1@1:1"), "{run_seed}");
    assert!(
        trace.contains(&"redeliver batch-1#2".to_string()),
        "{trace:?}"
    );

    let mut replay_config = config(1, 1, 2);
    replay_config.replay = Some(run_seed.clone());
    let (mut again, host) = double_processing(replay_config);
    let (runs, replayed) = host.check(&mut again).unwrap();
    assert_eq!(runs.len(), 1);
    let Verdict::Violated {
        trace: replayed_trace,
        ..
    } = replayed
    else {
        panic!("expected the replay to violate, got {replayed:?}");
    };
    assert_eq!(replayed_trace, trace);
}

#[test]
fn platform_redeliveries_are_bounded() {
    let mut check = check(config(1, 1, 1));
    assert!(check.redeliver_platform("batch-1", 2).is_err());
    check.next_run(0).unwrap().unwrap();
    assert!(check.redeliver_platform("batch-1", 1).is_err());
    assert!(check.redeliver_platform("req-1", 2).is_err());
    assert!(check.redeliver_platform("batch-1#1", 2).is_err());
    assert!(check.redeliver_platform("batch-1", 2).unwrap());
    assert!(!check.redeliver_platform("batch-1", 3).unwrap());
    // An exploring run keeps no trace (a violating one is replayed to get it).
    assert!(check.trace_lines().is_empty());
}

#[test]
fn databases_opened_in_a_run_end_with_it() {
    let (mut check, _) = checkout(config(1, 1, 0));
    assert!(check.d1_exists("payments/DB"));
    assert!(!check.d1_exists("DO:COUNTER/a"));
    check.next_run(0).unwrap().unwrap();
    check.d1_open("DO:COUNTER/a").unwrap();
    check
        .d1_exec("DO:COUNTER/a", "CREATE TABLE kv (k, v)")
        .unwrap();
    // Opening again keeps it as it is.
    check.d1_open("DO:COUNTER/a").unwrap();
    assert!(check.d1_exists("DO:COUNTER/a"));
    check
        .d1_run("DO:COUNTER/a", "SELECT * FROM kv", &[])
        .unwrap();
    check.decide("req-1#1", 0, "a", false).unwrap();
    check.end_run(None).unwrap();
    check.next_run(0).unwrap().unwrap();
    assert!(!check.d1_exists("DO:COUNTER/a"));
    assert!(check.d1_exists("payments/DB"));
}

#[test]
fn a_failed_batch_is_traced_at_the_statement_that_failed_counted_as_its_lines_are() {
    let base = format!("{:016x}", fnv1a("checkout"));
    let mut config = config(1, 1, 0);
    config.replay = Some(format!("{base}:1:-:0"));
    let mut check = Check::new(config).unwrap();
    check.d1_open("DB").unwrap();
    check
        .d1_setup("DB", "CREATE TABLE t (x NOT NULL);")
        .unwrap();
    check.seal().unwrap();
    check.next_run(0).unwrap().expect("the replayed run");
    let statement = |sql: &str| crate::d1::Statement {
        sql: sql.to_string(),
        params: Vec::new(),
    };
    let failed = check.d1_batch(
        "DB",
        &[
            statement("INSERT INTO t VALUES (1)"),
            statement("INSERT INTO t VALUES (NULL)"),
            statement("INSERT INTO t VALUES (3)"),
        ],
    );
    assert!(failed.is_err());
    let lines: Vec<&str> = check
        .trace_lines()
        .iter()
        .map(String::as_str)
        .filter(|line| line.contains(" batch["))
        .collect();
    assert_eq!(
        lines,
        [
            "  D1 DB batch[0]: INSERT INTO t VALUES (1) -> rolled back: batch[1] failed",
            "  D1 DB batch[1]: INSERT INTO t VALUES (NULL) -> error: NOT NULL constraint failed: t.x: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_NOTNULL)",
            "  D1 DB batch[2]: INSERT INTO t VALUES (3) -> rolled back: batch[1] failed",
        ]
    );
}
