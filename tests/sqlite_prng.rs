//! SQLite's PRNG is global to the library, so this test runs in its own process (an
//! integration test binary) where no other test reseeds it in between.

use eutaxy_engine::d1::Databases;

#[test]
fn sql_randomness_repeats_under_the_same_seed() {
    let mut databases = Databases::new();
    databases.open("DB").unwrap();
    databases.setup("DB", "CREATE TABLE t (x)").unwrap();
    databases.seal().unwrap();
    let mut draw = |seed: u64| {
        databases.restore().unwrap();
        databases.reseed(seed);
        let result = databases
            .run("DB", "SELECT random(), hex(randomblob(8))", &[])
            .unwrap();
        result.rows[0].clone()
    };
    let first = draw(7);
    assert_eq!(draw(7), first);
    assert_ne!(draw(8), first);
}
