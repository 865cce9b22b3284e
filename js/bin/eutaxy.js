#!/usr/bin/env node
// The `eutaxy` command. The host is built into js/dist by `pnpm build`.
import { main } from "../dist/cli.js";

process.exit(await main(process.argv.slice(2)));
