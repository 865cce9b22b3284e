/**
 * The service-binding example's two Workers, as the floor and Miniflare run them outside eutaxy:
 * their wrangler configs (name, compatibility date, D1 and service bindings) and their TypeScript
 * bundled with esbuild, once per bench.
 */

import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { build, type Plugin } from "esbuild";
import { parse } from "jsonc-parser";
import { workerBuildOptions } from "../src/load/bundle.ts";

export interface WorkerSource {
  readonly name: string;
  readonly compatibilityDate: string;
  /** D1 binding name → database name. */
  readonly d1: Readonly<Record<string, string>>;
  /** Service binding name → the Worker it reaches and its named entrypoint, if any. */
  readonly services: Readonly<Record<string, { readonly service: string; readonly entrypoint?: string }>>;
  /** The bundled module (ES module text). */
  readonly code: string;
}

/** The example's files, from the repository's root. */
export function examplePaths(root: string) {
  const dir = join(root, "examples", "service-binding");
  return {
    dir,
    checkout: join(dir, "worker.ts"),
    checkoutFixed: join(dir, "worker.fixed.ts"),
    checkoutConfig: join(dir, "wrangler.jsonc"),
    payments: join(dir, "payments", "worker.ts"),
    paymentsConfig: join(dir, "payments", "wrangler.jsonc"),
    schema: join(dir, "payments", "schema.sql"),
    violatedScenario: join(dir, "checkout.sim.ts"),
    fixedScenario: join(dir, "checkout.fixed.sim.ts"),
  };
}

interface WranglerFields {
  name?: string;
  compatibility_date?: string;
  d1_databases?: { binding: string; database_name?: string }[];
  services?: { binding: string; service: string; entrypoint?: string }[];
}

/**
 * `cloudflare:workers` for the floor: the entrypoint base class and nothing else, which is all
 * the payments Worker imports. Miniflare's workerd provides the real module.
 */
const workersModuleShim: Plugin = {
  name: "cloudflare-workers-shim",
  setup(b) {
    b.onResolve({ filter: /^cloudflare:workers$/ }, () => ({ path: "workers", namespace: "shim" }));
    b.onLoad({ filter: /.*/, namespace: "shim" }, () => ({
      contents: "export class WorkerEntrypoint { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }",
      loader: "js",
    }));
  },
};

/**
 * Reads `config` and bundles `entry` as wrangler does (esbuild, Workers' conditions). With
 * `shim`, `cloudflare:workers` is bundled in from the shim above; without, it is left external.
 */
export async function loadWorker(entry: string, config: string, shim: boolean): Promise<WorkerSource> {
  const fields = parse(readFileSync(config, "utf8")) as WranglerFields;
  // wrangler's bundling as eutaxy does it (load/bundle.ts), as an ES module for the floor's import
  // and Miniflare.
  const result = await build({
    ...workerBuildOptions(resolve(entry)),
    format: "esm",
    ...(shim ? { plugins: [workersModuleShim], external: ["node:*"] } : {}),
  });
  return {
    name: fields.name ?? "worker",
    compatibilityDate: fields.compatibility_date ?? "2025-09-01",
    d1: Object.fromEntries((fields.d1_databases ?? []).map((d) => [d.binding, d.database_name ?? d.binding])),
    services: Object.fromEntries(
      (fields.services ?? []).map((s) => [
        s.binding,
        s.entrypoint === undefined
          ? { service: s.service }
          : { service: s.service, entrypoint: s.entrypoint },
      ]),
    ),
    code: result.outputFiles[0]?.text ?? "",
  };
}

/** The example's schema as statements, without its comments. */
export function schemaStatements(file: string): string[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("--"))
    .join("\n")
    .split(";")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** A request of the driver, built as eutaxy's `http()` driver builds it. */
export function toRequest(path: string, body: unknown): Request {
  return new Request(`https://checkout.bench${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}
