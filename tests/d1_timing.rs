//! A rough timing of the per-run database loop (restore, then a handful of statements), for
//! comparing implementations by hand. Ignored by default; no timed assertions:
//!
//! ```text
//! cargo test --release --test d1_timing -- --ignored --nocapture
//! ```

use std::time::Instant;

use eutaxy_engine::d1::{Databases, Value};

const RUNS: u32 = 20_000;

#[test]
#[ignore]
fn per_run_loop() {
    let mut databases = Databases::new();
    databases.open("payments/DB").unwrap();
    databases
        .setup(
            "payments/DB",
            "CREATE TABLE charges (id INTEGER PRIMARY KEY, order_id TEXT NOT NULL, \
             amount INTEGER NOT NULL, key TEXT UNIQUE);\n\
             CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL);\n\
             INSERT INTO orders VALUES ('o-1', 'new'), ('o-2', 'new'), ('o-3', 'new');",
        )
        .unwrap();
    databases.seal().unwrap();
    let started = Instant::now();
    for run in 0..RUNS {
        databases.restore().unwrap();
        databases.reseed(u64::from(run));
        for order in 1..=3 {
            let id = Value::Text(format!("o-{order}"));
            databases
                .run(
                    "payments/DB",
                    "SELECT status FROM orders WHERE id = ?1",
                    std::slice::from_ref(&id),
                )
                .unwrap();
            databases
                .run(
                    "payments/DB",
                    "INSERT INTO charges (order_id, amount, key) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (key) DO NOTHING",
                    &[
                        id.clone(),
                        Value::Integer(100),
                        Value::Text(format!("k-{order}")),
                    ],
                )
                .unwrap();
            databases
                .run(
                    "payments/DB",
                    "UPDATE orders SET status = 'paid' WHERE id = ?1",
                    std::slice::from_ref(&id),
                )
                .unwrap();
        }
        databases
            .run(
                "payments/DB",
                "SELECT order_id, COUNT(*) FROM charges GROUP BY order_id HAVING COUNT(*) > 1",
                &[],
            )
            .unwrap();
    }
    let elapsed = started.elapsed();
    println!(
        "{RUNS} runs in {elapsed:?}: {:.1} µs per run",
        elapsed.as_secs_f64() * 1e6 / f64::from(RUNS)
    );
}
