/**
 * The world a scenario describes: the Worker under check, the callees that run beside it, the
 * scripted services, and the D1 databases, each binding resolved to what it reaches. Built once
 * per check; every problem in it is bad input, reported with the file it is in.
 */

import type { Scenario, ServiceHandlers } from "../cloudflare.ts";
import { InputError, shown } from "../errors.ts";
import { bundleWorker, type WorkerModule } from "../load/bundle.ts";
import type { LoadedScenario } from "../load/scenario.ts";
import type { WorkerConfig } from "../load/wrangler.ts";
import { readWranglerConfig } from "../load/wrangler.ts";

export interface SimWorker {
  /** The Worker's name from its wrangler config; reports and namespaces use it. */
  readonly name: string;
  /** `""` for the Worker under check, `"<name>/"` for a callee: its bindings' namespace. */
  readonly prefix: string;
  readonly entry: string;
  readonly config: WorkerConfig | undefined;
  readonly module: WorkerModule;
  readonly vars: Readonly<Record<string, unknown>>;
  /** Binding name → namespaced D1 database (`DB` → `payments/DB`). */
  readonly d1: ReadonlyMap<string, string>;
  /** Binding name → what a call over it reaches. */
  readonly services: Map<string, ServiceTarget>;
}

export type ServiceTarget =
  | {
      readonly kind: "worker";
      readonly worker: SimWorker;
      readonly entrypoint: string | undefined;
      readonly props: Readonly<Record<string, unknown>>;
    }
  | { readonly kind: "scripted"; readonly handlers: ServiceHandlers };

export interface World {
  readonly scenario: Scenario;
  readonly file: string;
  readonly main: SimWorker;
  readonly workers: readonly SimWorker[];
  /** Every namespaced D1 database, in the order the Workers bind them. */
  readonly databases: readonly string[];
}

async function loadWorker(
  entry: string,
  configPath: string | undefined,
  prefix: (name: string) => string,
): Promise<SimWorker> {
  const config = configPath ? readWranglerConfig(configPath) : undefined;
  const name = config?.name ?? "worker";
  const p = prefix(name);
  const module = await bundleWorker(entry);
  const d1 = new Map((config?.d1Databases ?? []).map((d) => [d.binding, `${p}${d.binding}`] as const));
  return { name, prefix: p, entry, config, module, vars: config?.vars ?? {}, d1, services: new Map() };
}

/** Resolves `binding` (`PAYMENTS`, or `payments/LEDGER` for a callee's) to its Worker and name. */
function ownerOf(workers: readonly SimWorker[], binding: string): [SimWorker, string] | undefined {
  const slash = binding.lastIndexOf("/");
  const prefix = slash < 0 ? "" : binding.slice(0, slash + 1);
  const owner = workers.find((w) => w.prefix === prefix);
  return owner ? [owner, binding.slice(slash + 1)] : undefined;
}

function describeServices(worker: SimWorker): string {
  const names = worker.config?.services.map((s) => s.binding) ?? [];
  return names.length ? `its service bindings are ${names.join(", ")}` : "it has no service bindings";
}

export async function buildWorld(loaded: LoadedScenario): Promise<World> {
  const { scenario, file } = loaded;
  const main = await loadWorker(scenario.worker.entry, scenario.worker.config, () => "");
  const workers: SimWorker[] = [main];

  for (const [i, step] of (scenario.setup ?? []).entries()) {
    if (step.kind === "d1Schema") continue;
    const found = ownerOf(workers, step.binding);
    if (!found) {
      throw new InputError(
        shown(file),
        `setup[${i}]: no Worker in the scenario is named by "${step.binding}"`,
      );
    }
    const [owner, binding] = found;
    const declared = owner.config?.services.find((s) => s.binding === binding);
    const where = owner.config ? shown(owner.config.file) : shown(owner.entry);
    if (owner.config && !declared) {
      throw new InputError(
        shown(file),
        `setup[${i}]: ${step.kind}("${step.binding}"): ${where} has no service binding ${binding}; ${describeServices(owner)}`,
      );
    }
    if (owner.services.has(binding)) {
      throw new InputError(shown(file), `setup[${i}]: service binding ${step.binding} is given twice`);
    }
    if (step.kind === "service") {
      owner.services.set(binding, { kind: "scripted", handlers: step.handlers });
      continue;
    }
    const callee = await loadWorker(step.entry, step.config, (name) => `${owner.prefix}${name}/`);
    if (workers.some((w) => w.prefix === callee.prefix)) {
      throw new InputError(shown(file), `setup[${i}]: two Workers in the scenario are named ${callee.name}`);
    }
    workers.push(callee);
    owner.services.set(binding, {
      kind: "worker",
      worker: callee,
      entrypoint: declared?.entrypoint,
      props: declared?.props ?? {},
    });
  }

  for (const worker of workers) {
    for (const s of worker.config?.services ?? []) {
      if (!worker.services.has(s.binding)) {
        const name = `${worker.prefix}${s.binding}`;
        throw new InputError(
          shown(file),
          `${shown(worker.config?.file ?? worker.entry)} binds service ${s.binding} (${s.service}), but the scenario gives neither callee("${name}", …) nor service("${name}", …)`,
        );
      }
    }
  }

  const databases = workers.flatMap((w) => [...w.d1.values()]);
  const knownDb = (db: string, what: string) => {
    if (!databases.includes(db)) {
      const known = databases.length ? `the D1 bindings are ${databases.join(", ")}` : "no Worker binds D1";
      throw new InputError(
        shown(file),
        `${what} names D1 binding "${db}", but no Worker in the scenario binds it; ${known}`,
      );
    }
  };
  for (const [i, step] of (scenario.setup ?? []).entries()) {
    if (step.kind === "d1Schema") knownDb(step.db, `setup[${i}]: d1Schema("${step.db}")`);
  }
  for (const inv of scenario.invariants) knownDb(inv.rows.db, `invariant ${inv.name}`);

  return { scenario, file, main, workers, databases };
}
