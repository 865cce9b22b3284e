/**
 * What `eutaxy` and `eutaxy/vitest` are when imported in workerd (package.json's `workerd`
 * condition, which @cloudflare/vitest-pool-workers resolves packages with, as wrangler does): a
 * check runs in Node, where it bundles the Workers with esbuild and runs its own simulation of
 * them. Without this, a test file in the Workers pool that imports either failed deep inside
 * esbuild, with `No such module "node:os"`, which says nothing about where the test belongs.
 */

throw new Error(
  'eutaxy checks scenarios in Node, not in workerd: this test imports eutaxy or eutaxy/vitest in the Workers pool (@cloudflare/vitest-pool-workers). Run scenario tests in a vitest project of their own, without the pool, beside the one with it (see "In vitest" in eutaxy\'s README)',
);
