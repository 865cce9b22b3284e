import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { inputErrorOf, scratchFolder } from "../../test/files.ts";
import { findWranglerConfig, readDevVars, readWranglerConfig } from "./wrangler.ts";

const scratch = scratchFolder("eutaxy-wrangler-");
const write = scratch.write;

describe("readWranglerConfig", () => {
  it("reads a wrangler.jsonc with comments and trailing commas", () => {
    const file = write(
      "wrangler.jsonc",
      `{
        // the payments Worker
        "name": "payments",
        "main": "src/worker.ts",
        "compatibility_date": "2025-01-01",
        "compatibility_flags": ["nodejs_compat",],
        "vars": { "CURRENCY": "EUR", "LIMITS": { "max": 3 } },
        "d1_databases": [{ "binding": "DB", "database_name": "payments", "database_id": "abc" }],
        "services": [{ "binding": "LEDGER", "service": "ledger", "entrypoint": "Ledger", "props": { "tenant": 1 } }],
        "kv_namespaces": [{ "binding": "CACHE", "id": "x" }],
        "r2_buckets": [{ "binding": "UPLOADS", "bucket_name": "uploads", "preview_bucket_name": "uploads-dev" }, { "binding": "TMP" }],
        "observability": { "enabled": true }, /* not used by eutaxy, not rejected */
      }`,
    );
    expect(readWranglerConfig(file)).toEqual({
      file,
      name: "payments",
      main: join(scratch.dir, "src/worker.ts"),
      compatibilityDate: "2025-01-01",
      compatibilityFlags: ["nodejs_compat"],
      vars: { CURRENCY: "EUR", LIMITS: { max: 3 } },
      d1Databases: [{ binding: "DB", databaseName: "payments", databaseId: "abc" }],
      services: [{ binding: "LEDGER", service: "ledger", entrypoint: "Ledger", props: { tenant: 1 } }],
      kvNamespaces: [{ binding: "CACHE", id: "x" }],
      r2Buckets: [
        { binding: "UPLOADS", bucketName: "uploads", previewBucketName: "uploads-dev" },
        { binding: "TMP" },
      ],
      durableObjects: [],
      durableObjectClasses: new Map(),
      queueProducers: [],
      queueConsumers: [],
      crons: [],
      unsupported: [],
      elsewhere: new Map(),
    });
  });

  it("reads a D1 binding's preview_database_id, which wrangler dev keys a local database by", () => {
    const file = write(
      "wrangler.json",
      `{ "name": "notes", "d1_databases": [{ "binding": "DB", "database_name": "notes", "preview_database_id": "p-1" }] }`,
    );
    expect(readWranglerConfig(file).d1Databases).toEqual([
      { binding: "DB", databaseName: "notes", previewDatabaseId: "p-1" },
    ]);
  });

  it("finds a D1 binding's migrations where wrangler d1 migrations apply does", () => {
    const file = write(
      "wrangler.jsonc",
      `{ "name": "shop", "d1_databases": [
        { "binding": "DB", "database_name": "shop", "migrations_dir": "db/migrations" },
        { "binding": "LOGS", "database_name": "logs" }
      ] }`,
    );
    const [declared, bare] = readWranglerConfig(file).d1Databases;
    expect(declared?.migrationsDir).toBe(join(dirname(file), "db/migrations"));
    // Without migrations_dir, wrangler's default folder, when there is one.
    expect(bare?.migrationsDir).toBeUndefined();
    mkdirSync(join(dirname(file), "migrations"));
    expect(readWranglerConfig(file).d1Databases[1]?.migrationsDir).toBe(join(dirname(file), "migrations"));
  });

  it("reads Durable Objects, migrations, queues and cron triggers with Cloudflare's defaults", () => {
    const file = write(
      "wrangler.jsonc",
      `{
        "name": "jobs",
        "durable_objects": { "bindings": [{ "name": "COUNTER", "class_name": "Counter" }] },
        "migrations": [{ "tag": "v1", "new_sqlite_classes": ["Counter"] }, { "tag": "v2", "new_classes": ["Legacy"] }],
        "queues": {
          "producers": [{ "binding": "JOBS", "queue": "jobs" }],
          "consumers": [
            { "queue": "jobs", "dead_letter_queue": "jobs-dlq" },
            { "queue": "other", "max_batch_size": 5, "max_retries": 0 },
            { "queue": "pulled", "type": "http_pull" }
          ]
        },
        "triggers": { "crons": ["*/5 * * * *"] }
      }`,
    );
    const config = readWranglerConfig(file);
    expect(config.durableObjects).toEqual([{ name: "COUNTER", className: "Counter" }]);
    expect(config.durableObjectClasses).toEqual(
      new Map([
        ["Counter", { sqlite: true }],
        ["Legacy", { sqlite: false }],
      ]),
    );
    expect(config.queueProducers).toEqual([{ binding: "JOBS", queue: "jobs" }]);
    expect(config.queueConsumers).toEqual([
      { queue: "jobs", maxBatchSize: 10, maxRetries: 3, deadLetterQueue: "jobs-dlq" },
      { queue: "other", maxBatchSize: 5, maxRetries: 0 },
    ]);
    expect(config.crons).toEqual(["*/5 * * * *"]);
  });

  it("lists every binding kind it does not simulate, so that using one stops the check", () => {
    const file = write(
      "wrangler.toml",
      `name = "edge"
main = "worker.ts"
ai = { binding = "AI" }
media = { binding = "MEDIA" }

[[hyperdrive]]
binding = "HYPERDRIVE"
id = "h1"

[[ratelimits]]
name = "LIMITER"
namespace_id = "1001"
simple = { limit = 100, period = 60 }

[[secrets_store_secrets]]
binding = "API_KEY"
store_id = "s1"
secret_name = "api-key"

[[pipelines]]
binding = "EVENTS"
pipeline = "events"

[[send_email]]
name = "MAIL"

[[unsafe.bindings]]
name = "UNSAFE_LIMITER"
type = "ratelimit"
namespace_id = "1002"

[logfwdr]
bindings = [{ name = "LOGS", destination = "logs" }]
`,
    );
    expect(readWranglerConfig(file).unsupported).toEqual([
      { binding: "HYPERDRIVE", field: "hyperdrive[0]" },
      { binding: "MAIL", field: "send_email[0]" },
      { binding: "LIMITER", field: "ratelimits[0]" },
      { binding: "API_KEY", field: "secrets_store_secrets[0]" },
      { binding: "EVENTS", field: "pipelines[0]" },
      { binding: "UNSAFE_LIMITER", field: "unsafe.bindings[0]" },
      { binding: "LOGS", field: "logfwdr.bindings[0]" },
      { binding: "AI", field: "ai" },
      { binding: "MEDIA", field: "media" },
    ]);
  });

  it("refuses a misspelt key of one it reads, whose bindings would be missing, and leaves wrangler's other keys alone", () => {
    const misspelt = write(
      "wrangler.json",
      `{ "name": "x", "d1_database": [{ "binding": "DB", "database_name": "db", "database_id": "1" }] }`,
    );
    expect(inputErrorOf(() => readWranglerConfig(misspelt)).problem).toBe(
      "has an unknown field d1_database: did you mean d1_databases?",
    );
    const inEnv = write("wrangler.json", `{ "name": "x", "env": { "staging": { "kv_namespace": [] } } }`);
    expect(inputErrorOf(() => readWranglerConfig(inEnv, "staging")).problem).toBe(
      "has an unknown field env.staging.kv_namespace: did you mean kv_namespaces?",
    );
    const others = write(
      "wrangler.json",
      `{ "name": "x", "route": "example.com/*", "routes": [], "workers_dev": true, "observability": {}, "placement": {}, "upload_source_maps": true, "tail_consumers": [], "my_own_notes": 1 }`,
    );
    expect(readWranglerConfig(others).name).toBe("x");
  });

  it("rejects a dead letter queue that is the queue itself: its messages would go round forever", () => {
    const file = write(
      "wrangler.json",
      `{ "name": "q", "queues": { "consumers": [{ "queue": "a", "dead_letter_queue": "a" }] } }`,
    );
    expect(() => readWranglerConfig(file)).toThrow(
      /queues.consumers\[0\].dead_letter_queue must be another queue than a/,
    );
  });

  it("rejects a queue consumer batch size Cloudflare does not allow", () => {
    const file = write(
      "wrangler.json",
      `{ "name": "q", "queues": { "consumers": [{ "queue": "a", "max_batch_size": 500 }] } }`,
    );
    expect(() => readWranglerConfig(file)).toThrow(
      /queues.consumers\[0\].max_batch_size must be a whole number from 1 to 100/,
    );
  });

  it("reads a queue consumer's max_concurrency, null as the default, and refuses what Cloudflare does not allow", () => {
    const consumer = (value: string) =>
      readWranglerConfig(
        write(
          "wrangler.json",
          `{ "name": "q", "queues": { "consumers": [{ "queue": "a", "max_concurrency": ${value} }] } }`,
        ),
      ).queueConsumers[0];
    expect(consumer("1")?.maxConcurrency).toBe(1);
    expect(consumer("null")).not.toHaveProperty("maxConcurrency");
    expect(() => consumer("0")).toThrow(
      /queues.consumers\[0\].max_concurrency must be a whole number from 1 to 250/,
    );
  });

  it("reads define as wrangler hands it to esbuild, and refuses a value that is not an expression's text", () => {
    const file = write(
      "wrangler.json",
      `{ "name": "d", "define": { "API_BASE": "\\"https://api.example\\"" } }`,
    );
    expect(readWranglerConfig(file).define).toEqual({ API_BASE: '"https://api.example"' });
    const bad = write("wrangler.json", `{ "name": "d", "define": { "DEBUG": true } }`);
    expect(() => readWranglerConfig(bad)).toThrow(/define\.DEBUG must be a string/);
  });

  it("reads module rules in their order, [[rules]] in TOML, and refuses a type wrangler's config does not allow", () => {
    const file = write(
      "wrangler.toml",
      `name = "docs"
[[rules]]
type = "Text"
globs = ["**/*.md"]
fallthrough = true

[[rules]]
type = "Data"
globs = ["**/*.dat", "**/*.raw"]
`,
    );
    expect(readWranglerConfig(file).rules).toEqual([
      { type: "Text", globs: ["**/*.md"], fallthrough: true, at: "rules[0]" },
      { type: "Data", globs: ["**/*.dat", "**/*.raw"], at: "rules[1]" },
    ]);
    const python = write(
      "wrangler.json",
      `{ "name": "py", "rules": [{ "type": "Text", "globs": ["**/*.md"] }, { "type": "PythonModule", "globs": ["**/*.py"] }] }`,
    );
    expect(inputErrorOf(() => readWranglerConfig(python)).message).toBe(
      `${python}: rules[1].type is "PythonModule"; a module rule's type must be one of Text, Data, CompiledWasm, ESModule, CommonJS, as wrangler's config allows`,
    );
    const noGlobs = write(
      "wrangler.json",
      `{ "name": "g", "rules": [{ "type": "Text", "globs": "**/*.md" }] }`,
    );
    expect(inputErrorOf(() => readWranglerConfig(noGlobs)).problem).toBe(
      "rules[0].globs must be an array of strings",
    );
    const fallthrough = write(
      "wrangler.json",
      `{ "name": "f", "rules": [{ "type": "Text", "globs": ["**/*.md"], "fallthrough": "yes" }] }`,
    );
    expect(inputErrorOf(() => readWranglerConfig(fallthrough)).problem).toBe(
      "rules[0].fallthrough must be true or false",
    );
  });

  it("takes an environment's module rules from the top level unless it sets its own, as wrangler inherits them", () => {
    const file = write(
      "wrangler.json",
      `{
        "name": "docs",
        "rules": [{ "type": "Text", "globs": ["**/*.md"] }],
        "env": { "staging": {}, "qa": { "rules": [{ "type": "Data", "globs": ["**/*.md"] }] } }
      }`,
    );
    expect(readWranglerConfig(file, "staging").rules).toEqual([
      { type: "Text", globs: ["**/*.md"], at: "rules[0]" },
    ]);
    expect(readWranglerConfig(file, "qa").rules).toEqual([
      { type: "Data", globs: ["**/*.md"], at: "env.qa.rules[0]" },
    ]);
  });

  it("reads what decides the bundle as wrangler does: tsconfig against the config's folder, alias from the top level alone", () => {
    const file = write(
      "wrangler.toml",
      `name = "hooks"
tsconfig = "./config/tsconfig.worker.json"
keep_names = false
jsx_factory = "h"
jsx_fragment = "Fragment"

[alias]
"@billing/clock" = "./shims/clock.ts"

[env.staging]
tsconfig = "./tsconfig.staging.json"
alias = { "@billing/clock" = "./other.ts" }
`,
    );
    const top = readWranglerConfig(file);
    expect(top.tsconfig).toBe(join(scratch.dir, "config/tsconfig.worker.json"));
    expect(top.alias).toEqual({ "@billing/clock": "./shims/clock.ts" });
    expect([top.keepNames, top.jsxFactory, top.jsxFragment]).toEqual([false, "h", "Fragment"]);
    // An environment inherits tsconfig, keep_names and the JSX settings unless it sets them; an
    // alias it sets is not read, as wrangler reads `alias` at the top level only.
    const staging = readWranglerConfig(file, "staging");
    expect(staging.tsconfig).toBe(join(scratch.dir, "tsconfig.staging.json"));
    expect(staging.alias).toEqual({ "@billing/clock": "./shims/clock.ts" });
    expect([staging.keepNames, staging.jsxFactory]).toEqual([false, "h"]);

    const badAlias = write("wrangler.json", `{ "name": "a", "alias": { "lodash": 1 } }`);
    expect(inputErrorOf(() => readWranglerConfig(badAlias)).problem).toBe(
      'alias["lodash"] must be a string: the module that replaces lodash',
    );
    const badKeep = write("wrangler.json", `{ "name": "k", "keep_names": "no" }`);
    expect(inputErrorOf(() => readWranglerConfig(badKeep)).problem).toBe("keep_names must be true or false");
  });

  it("fills in empty bindings and leaves optional fields out", () => {
    const file = write("wrangler.json", `{ "name": "bare" }`);
    expect(readWranglerConfig(file)).toEqual({
      file,
      name: "bare",
      compatibilityFlags: [],
      vars: {},
      d1Databases: [],
      services: [],
      kvNamespaces: [],
      r2Buckets: [],
      durableObjects: [],
      durableObjectClasses: new Map(),
      queueProducers: [],
      queueConsumers: [],
      crons: [],
      unsupported: [],
      elsewhere: new Map(),
    });
  });

  it("reads a wrangler.toml", () => {
    const file = write(
      "wrangler.toml",
      `name = "checkout"
main = "./worker.ts"

[vars]
MODE = "test"

[[d1_databases]]
binding = "DB"
database_name = "orders"

[[services]]
binding = "PAYMENTS"
service = "payments"
entrypoint = "Payments"
`,
    );
    const config = readWranglerConfig(file);
    expect(config.name).toBe("checkout");
    expect(config.main).toBe(join(scratch.dir, "worker.ts"));
    expect(config.vars).toEqual({ MODE: "test" });
    expect(config.d1Databases).toEqual([{ binding: "DB", databaseName: "orders" }]);
    expect(config.services).toEqual([{ binding: "PAYMENTS", service: "payments", entrypoint: "Payments" }]);
  });

  it("reports a missing file", () => {
    const path = join(scratch.dir, "wrangler.jsonc");
    expect(inputErrorOf(() => readWranglerConfig(path)).message).toBe(`${path}: no such file`);
  });

  it("reports a JSON syntax error with its line and column", () => {
    const path = write("wrangler.jsonc", `{\n  "name": "x",\n  // a comment\n  , "main": 1\n}`);
    expect(inputErrorOf(() => readWranglerConfig(path)).message).toBe(
      `${path}:4:3: expected a property name`,
    );
  });

  it("reports a TOML syntax error with its line and column", () => {
    const path = write("wrangler.toml", `name = "x"\n[vars\nA = 1\n`);
    const error = inputErrorOf(() => readWranglerConfig(path));
    expect(error.file).toMatch(/wrangler\.toml:2:\d+$/);
    expect(error.problem).not.toContain("\n");
  });

  it.each([
    [`{}`, "name must be a non-empty string"],
    [`{ "name": 3 }`, "name must be a non-empty string"],
    [`[]`, "the config must be an object"],
    [`{ "name": "x", "main": true }`, "main must be a string"],
    [
      `{ "name": "x", "compatibility_flags": "nodejs_compat" }`,
      "compatibility_flags must be an array of strings",
    ],
    [`{ "name": "x", "vars": [] }`, "vars must be an object"],
    [`{ "name": "x", "d1_databases": {} }`, "d1_databases must be an array"],
    [`{ "name": "x", "ratelimits": {} }`, "ratelimits must be an array"],
    [`{ "name": "x", "unsafe": { "bindings": [1] } }`, "unsafe.bindings[0] must be an object"],
    [
      `{ "name": "x", "d1_databases": [{ "binding": "DB", "database_id": 7 }] }`,
      "d1_databases[0].database_id must be a string",
    ],
    [`{ "name": "x", "services": ["payments"] }`, "services[0] must be an object"],
    [
      `{ "name": "x", "services": [{ "binding": 1, "service": "p" }] }`,
      "services[0].binding must be a non-empty string",
    ],
    [`{ "name": "x", "services": [{ "binding": "P" }] }`, "services[0].service must be a non-empty string"],
    [
      `{ "name": "x", "services": [{ "binding": "P", "service": "p", "props": 1 }] }`,
      "services[0].props must be an object",
    ],
  ])("rejects %s", (text, problem) => {
    const path = write("wrangler.json", text);
    expect(inputErrorOf(() => readWranglerConfig(path)).message).toBe(`${path}: ${problem}`);
  });

  it("rejects one binding name declared twice", () => {
    const path = write(
      "wrangler.json",
      `{ "name": "x", "d1_databases": [{ "binding": "DB" }], "vars": { "DB": "oops" } }`,
    );
    expect(inputErrorOf(() => readWranglerConfig(path)).problem).toBe(
      "binding DB is declared twice: d1_databases[0] and vars.DB",
    );
    const refused = write(
      "wrangler.json",
      `{ "name": "x", "vars": { "LIMITER": "off" }, "ratelimits": [{ "name": "LIMITER", "namespace_id": "1" }] }`,
    );
    expect(inputErrorOf(() => readWranglerConfig(refused)).problem).toBe(
      "binding LIMITER is declared twice: vars.LIMITER and ratelimits[0]",
    );
  });
});

describe("readWranglerConfig of an environment", () => {
  const staging = `name = "checkout"
main = "src/index.ts"
compatibility_date = "2025-01-01"
compatibility_flags = ["nodejs_compat"]
triggers = { crons = ["0 * * * *"] }
migrations = [{ tag = "v1", new_sqlite_classes = ["Counter"] }]
assets = { directory = "public", binding = "ASSETS" }

[vars]
MODE = "production"

[[kv_namespaces]]
binding = "CACHE"
id = "prod"

[env.staging]
compatibility_date = "2025-06-01"

[env.staging.vars]
MODE = "staging"

[[env.staging.d1_databases]]
binding = "DB"
database_name = "orders-staging"

[[env.staging.queues.producers]]
binding = "JOBS"
queue = "jobs-staging"

[env.production]
name = "checkout-live"
triggers = { crons = [] }
`;

  it("inherits the inheritable keys, takes vars and bindings from the environment alone, and names it <name>-<env>", () => {
    const file = write("wrangler.toml", staging);
    expect(readWranglerConfig(file, "staging")).toEqual({
      file,
      env: "staging",
      name: "checkout-staging",
      main: join(scratch.dir, "src/index.ts"),
      compatibilityDate: "2025-06-01",
      compatibilityFlags: ["nodejs_compat"],
      vars: { MODE: "staging" },
      d1Databases: [{ binding: "DB", databaseName: "orders-staging" }],
      services: [],
      kvNamespaces: [],
      r2Buckets: [],
      durableObjects: [],
      durableObjectClasses: new Map([["Counter", { sqlite: true }]]),
      queueProducers: [{ binding: "JOBS", queue: "jobs-staging" }],
      queueConsumers: [],
      crons: ["0 * * * *"],
      unsupported: [{ binding: "ASSETS", field: "assets" }],
      // Not inherited from the top level, so the Worker lacks it: messages name where it is.
      elsewhere: new Map([["CACHE", ["the top level"]]]),
    });
  });

  it("keeps the name and the inheritable keys an environment sets, and the top level without env", () => {
    const file = write("wrangler.toml", staging);
    const production = readWranglerConfig(file, "production");
    expect(production.name).toBe("checkout-live");
    expect(production.crons).toEqual([]);
    expect(production.vars).toEqual({});
    const top = readWranglerConfig(file);
    expect(top).not.toHaveProperty("env");
    expect(top.name).toBe("checkout");
    expect(top.vars).toEqual({ MODE: "production" });
    expect(top.kvNamespaces).toEqual([{ binding: "CACHE", id: "prod" }]);
    expect(top.elsewhere).toEqual(
      new Map([
        ["DB", ["env.staging"]],
        ["JOBS", ["env.staging"]],
      ]),
    );
    expect(top.d1Databases).toEqual([]);
  });

  it("reads an environment of a JSON config, its own migrations over the top level's", () => {
    const file = write(
      "wrangler.jsonc",
      `{
        "name": "rooms",
        "main": "worker.ts",
        "migrations": [{ "tag": "v1", "new_classes": ["Room"] }],
        "durable_objects": { "bindings": [{ "name": "ROOMS", "class_name": "Room" }] },
        "env": {
          "dev": {
            "migrations": [{ "tag": "v1", "new_sqlite_classes": ["Room"] }],
            "durable_objects": { "bindings": [{ "name": "DEV_ROOMS", "class_name": "Room" }] },
            "services": [{ "binding": "AUTH", "service": "auth-dev" }]
          }
        }
      }`,
    );
    const dev = readWranglerConfig(file, "dev");
    expect(dev.name).toBe("rooms-dev");
    expect(dev.main).toBe(join(scratch.dir, "worker.ts"));
    expect(dev.durableObjects).toEqual([{ name: "DEV_ROOMS", className: "Room" }]);
    expect(dev.durableObjectClasses).toEqual(new Map([["Room", { sqlite: true }]]));
    expect(dev.services).toEqual([{ binding: "AUTH", service: "auth-dev" }]);
  });

  it("reports an environment the config does not have, with those it has", () => {
    const file = write("wrangler.toml", staging);
    expect(inputErrorOf(() => readWranglerConfig(file, "prod")).message).toBe(
      `${file}: has no environment prod (env.prod); its environments are staging, production`,
    );
    const bare = write("wrangler.json", `{ "name": "bare" }`);
    expect(inputErrorOf(() => readWranglerConfig(bare, "staging")).message).toBe(
      `${bare}: has no environment staging (env.staging); it has none`,
    );
    const inherited = write("wrangler.json", `{ "name": "x", "env": { "staging": {} } }`);
    expect(inputErrorOf(() => readWranglerConfig(inherited, "toString")).problem).toBe(
      "has no environment toString (env.toString); its environments are staging",
    );
  });

  it("names the environment in the field a problem is in", () => {
    const path = write(
      "wrangler.json",
      `{ "name": "x", "env": { "staging": { "d1_databases": [{ "binding": 1 }] }, "qa": 3 } }`,
    );
    expect(inputErrorOf(() => readWranglerConfig(path, "staging")).problem).toBe(
      "env.staging.d1_databases[0].binding must be a non-empty string",
    );
    expect(inputErrorOf(() => readWranglerConfig(path, "qa")).problem).toBe("env.qa must be an object");
    const twice = write(
      "wrangler.json",
      `{ "name": "x", "env": { "staging": { "vars": { "BUCKET": "b" }, "r2_buckets": [{ "binding": "BUCKET" }] } } }`,
    );
    expect(inputErrorOf(() => readWranglerConfig(twice, "staging")).problem).toBe(
      "binding BUCKET is declared twice: env.staging.vars.BUCKET and env.staging.r2_buckets[0]",
    );
  });
});

describe("readDevVars", () => {
  /** The values readDevVars reads for the config in the scratch folder, as `key → [value, file name]`. */
  function devVars(env?: string): Record<string, [string, string]> {
    const config = readWranglerConfig(
      write("wrangler.json", `{ "name": "w", "env": { "staging": {} } }`),
      env,
    );
    return Object.fromEntries(
      [...readDevVars(config)].map(([key, { value, file }]) => [
        key,
        [value, file.slice(scratch.dir.length + 1)],
      ]),
    );
  }

  it("reads nothing when there is no file of local secrets", () => {
    expect(devVars()).toEqual({});
  });

  it("reads only the keys secrets.required lists, when the config has it", () => {
    write(".dev.vars", "A=1\nB=2\n");
    const config = readWranglerConfig(
      write("wrangler.json", `{ "name": "w", "secrets": { "required": ["A"] } }`),
    );
    expect([...readDevVars(config).keys()]).toEqual(["A"]);
    const bad = write("wrangler.json", `{ "name": "w", "secrets": { "required": "A" } }`);
    expect(() => readWranglerConfig(bad)).toThrow(/secrets\.required must be an array of strings/);
  });

  it("reads .dev.vars beside the config as dotenv text, its values as written, and no .env then", () => {
    write(".dev.vars", `# local only\nAPI_KEY=abc$DEF\nGREETING="hello world"\nEMPTY=\n`);
    write(".env", "OTHER=1\n");
    expect(devVars()).toEqual({
      API_KEY: ["abc$DEF", ".dev.vars"],
      GREETING: ["hello world", ".dev.vars"],
      EMPTY: ["", ".dev.vars"],
    });
  });

  it("reads .dev.vars.<env> instead of .dev.vars for an environment, when it exists", () => {
    write(".dev.vars", "API_KEY=top\n");
    expect(devVars("staging")).toEqual({ API_KEY: ["top", ".dev.vars"] });
    write(".dev.vars.staging", "API_KEY=staging\n");
    expect(devVars("staging")).toEqual({ API_KEY: ["staging", ".dev.vars.staging"] });
    expect(devVars()).toEqual({ API_KEY: ["top", ".dev.vars"] });
  });

  it("reads .env files, each over the ones before, when there is no .dev.vars", () => {
    write(".env", "A=env\nB=env\nC=env\nD=env\n");
    write(".env.local", "B=local\n");
    write(".env.staging", "C=staging\n");
    write(".env.staging.local", "D=staging-local\n");
    expect(devVars()).toEqual({
      A: ["env", ".env"],
      B: ["local", ".env.local"],
      C: ["env", ".env"],
      D: ["env", ".env"],
    });
    expect(devVars("staging")).toEqual({
      A: ["env", ".env"],
      B: ["local", ".env.local"],
      C: ["staging", ".env.staging"],
      D: ["staging-local", ".env.staging.local"],
    });
  });

  it("refuses a .env value wrangler would expand, naming its file", () => {
    const file = write(".env.local", `URL=https://\${HOST}/api\n`);
    write(".env", "HOST=example.com\n");
    expect(inputErrorOf(() => devVars()).message).toBe(
      `${file}: URL: wrangler expands the $ in this value (dotenv-expand), which eutaxy does not; write the value it should have in .dev.vars, which wrangler then reads instead of .env files`,
    );
  });
});

describe("findWranglerConfig", () => {
  it("finds the first config wrangler would read, or none", () => {
    expect(findWranglerConfig(scratch.dir)).toBeUndefined();
    write("wrangler.toml", `name = "x"`);
    expect(findWranglerConfig(scratch.dir)).toBe(join(scratch.dir, "wrangler.toml"));
    write("wrangler.jsonc", `{ "name": "x" }`);
    expect(findWranglerConfig(scratch.dir)).toBe(join(scratch.dir, "wrangler.jsonc"));
    write("wrangler.json", `{ "name": "x" }`);
    expect(findWranglerConfig(scratch.dir)).toBe(join(scratch.dir, "wrangler.json"));
  });

  it("looks in the folders above the entry's, nearest first, as wrangler does", () => {
    const src = join(scratch.dir, "app", "src", "handlers");
    mkdirSync(src, { recursive: true });
    expect(findWranglerConfig(src)).toBeUndefined();
    write("wrangler.json", `{ "name": "outer" }`);
    expect(findWranglerConfig(src)).toBe(join(scratch.dir, "wrangler.json"));
    write("app/wrangler.toml", `name = "app"`);
    expect(findWranglerConfig(src)).toBe(join(scratch.dir, "app", "wrangler.toml"));
  });

  it("does not take a folder named like a config for one", () => {
    mkdirSync(join(scratch.dir, "wrangler.json"));
    expect(findWranglerConfig(scratch.dir)).toBeUndefined();
  });
});
