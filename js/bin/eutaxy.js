#!/usr/bin/env node
// The `eutaxy` command. The host is built into js/dist by `pnpm build`.
import { main } from "../dist/cli.js";

// The process ends when its work does, not at once: Miniflare removes its temporary folder after
// `dispose()` returns, and exiting then would leave it behind. Whatever else still holds the
// event loop gets a moment, then the process exits regardless.
const code = await main(process.argv.slice(2));
process.exitCode = code;
setTimeout(() => process.exit(code), 2000).unref();
