#!/usr/bin/env node
// The `eutaxy` command. The host is built into js/dist by `pnpm build`.
import { main } from "../dist/cli.js";

// Cloudflare runs Workers in UTC. A check switches the process to UTC while it runs by itself; the
// command stays in UTC throughout, so that nothing switches, and the `--workers` threads and
// workerd, which take their zone from this process, start in it (js/src/sim/globals.ts).
process.env.TZ = "UTC";

// The process ends when its work does, not at once: Miniflare removes its temporary folder after
// `dispose()` returns, and exiting then would leave it behind. Whatever else still holds the
// event loop gets a moment, then the process exits regardless.
const code = await main(process.argv.slice(2));
process.exitCode = code;
setTimeout(() => process.exit(code), 2000).unref();
