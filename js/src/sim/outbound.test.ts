import { describe, expect, it } from "vitest";
import type { OutboundHandlers } from "../cloudflare.ts";
import { InputError } from "../errors.ts";
import type { WorkerConfig } from "../load/wrangler.ts";
import type { RunContext } from "./context.ts";
import type { EffectOptions } from "./effect-scope.ts";
import { findHandler, outboundFetch } from "./outbound.ts";

interface Made {
  readonly label: string;
  readonly transient: boolean;
}

/**
 * A fake run: `current` is an invocation whose effects run at once (or, with `transient`, run
 * their transient alternative); `made` lists the effects, `failures` what `fail` got.
 */
function fakeRun(
  scripts: OutboundHandlers[],
  options: { transient?: boolean; global?: boolean; config?: Partial<WorkerConfig> } = {},
) {
  const made: Made[] = [];
  const failures: Error[] = [];
  const invocation = {
    id: "req-1#1",
    invocation: "req-1#1",
    worker: "shop",
    effect<T>(
      label: string,
      perform: (effect: number) => T | Promise<T>,
      opts: EffectOptions = {},
    ): Promise<T> {
      const index = made.push({ label, transient: opts.transient !== undefined }) - 1;
      const run = options.transient ? (opts.transient as (effect: number) => T) : perform;
      return new Promise<T>((resolve) => resolve(run(index)));
    },
  };
  const run = {
    current: options.global ? undefined : invocation,
    world: {
      outbound: scripts,
      file: "/scenarios/pay.sim.ts",
      workers: [{ name: "shop", config: options.config ?? { compatibilityDate: "2025-01-01" } }],
    },
    fail(error: Error) {
      failures.push(error);
    },
  } as unknown as RunContext;
  return { run, made, failures };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

describe("outbound fetch", () => {
  it("is one effect labelled with the method, origin and path, answered by the script", async () => {
    const seen: Request[] = [];
    const { run, made } = fakeRun([
      {
        "https://api.payments.example/": async (request) => {
          seen.push(request);
          const body = (await request.json()) as { amount: number };
          return Response.json({ id: "ch_1", amount: body.amount }, { status: 201 });
        },
      },
    ]);
    const response = await outboundFetch(run, "https://api.payments.example/v1/charges?expand=x", {
      method: "POST",
      headers: { "Idempotency-Key": "k-1" },
      body: JSON.stringify({ amount: 500 }),
    });
    expect(made).toEqual([{ label: "fetch POST https://api.payments.example/v1/charges", transient: true }]);
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ id: "ch_1", amount: 500 });
    expect(response.url).toBe("https://api.payments.example/v1/charges?expand=x");
    expect(seen[0]?.headers.get("idempotency-key")).toBe("k-1");
  });

  it("picks the longest matching prefix, the first given on a tie", () => {
    const a = () => new Response("a");
    const b = () => new Response("b");
    const c = () => new Response("c");
    const scripts: OutboundHandlers[] = [
      { "https://x.example/": a, "https://x.example/v1/": b },
      { "https://x.example/v1/": c },
    ];
    expect(findHandler(scripts, "https://x.example/v1/charges")?.handler).toBe(b);
    expect(findHandler(scripts, "https://x.example/v2")?.handler).toBe(a);
    expect(findHandler(scripts, "https://y.example/")).toBeUndefined();
  });

  it("gives each call its own Response, so a script may return the same one every time", async () => {
    const shared = new Response("ok");
    const { run } = fakeRun([{ "https://x.example/": () => shared }]);
    expect(await (await outboundFetch(run, "https://x.example/a", undefined)).text()).toBe("ok");
    expect(await (await outboundFetch(run, "https://x.example/b", undefined)).text()).toBe("ok");
  });

  it("hands each script call a fresh Request", async () => {
    const seen: Request[] = [];
    const { run } = fakeRun([
      {
        "https://x.example/": async (request) => {
          seen.push(request);
          return new Response(await request.text());
        },
      },
    ]);
    const request = new Request("https://x.example/", { method: "PUT", body: "hello" });
    expect(await (await outboundFetch(run, request, undefined)).text()).toBe("hello");
    expect(seen[0]).not.toBe(request);
  });

  it("stops the check with an InputError naming an unscripted URL, and rejects the fetch", async () => {
    const { run, made, failures } = fakeRun([{ "https://api.payments.example/": () => new Response("") }]);
    const error = await rejection(outboundFetch(run, "https://hooks.example/notify?x=1", { method: "POST" }));
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toContain(
      'req-1#1 fetched POST https://hooks.example/notify?x=1, but the scenario scripts no answer for it: add outbound({ "https://hooks.example/": (request) => … }) to its setup',
    );
    expect(failures).toEqual([error]);
    expect(made).toEqual([]);
  });

  it("rejects with the runtime's error outside a handler, and makes no effect", async () => {
    const { run, made } = fakeRun([{ "https://x.example/": () => new Response("") }], { global: true });
    const error = await rejection(outboundFetch(run, "https://x.example/", undefined));
    expect(error.message).toMatch(/^Disallowed operation called within global scope\./);
    expect(made).toEqual([]);
  });

  it("offers a lost connection as its transient fault: a retryable Error, the script not asked", async () => {
    let asked = 0;
    const { run } = fakeRun(
      [
        {
          "https://x.example/": () => {
            asked++;
            return new Response("");
          },
        },
      ],
      { transient: true },
    );
    const error = await rejection(outboundFetch(run, "https://x.example/", undefined));
    expect(error.constructor).toBe(Error);
    expect(error.message).toBe("Network connection lost.");
    expect((error as Error & { retryable?: boolean }).retryable).toBe(true);
    expect(asked).toBe(0);
  });

  it("rejects a bad URL at once, as the runtime does, without an effect", async () => {
    const { run, made } = fakeRun([]);
    const error = await rejection(outboundFetch(run, "/relative", undefined));
    expect(error).toBeInstanceOf(TypeError);
    expect(made).toEqual([]);
  });

  it("takes cache: no-store only, and no cache at all before the compatibility date that brought it", async () => {
    const scripts = [{ "https://api.example/": () => new Response("fresh") }];
    const current = fakeRun(scripts);
    const answered = await outboundFetch(current.run, "https://api.example/", { cache: "no-store" });
    expect(await answered.text()).toBe("fresh");
    const mode = await rejection(outboundFetch(current.run, "https://api.example/", { cache: "no-cache" }));
    expect(mode).toBeInstanceOf(TypeError);
    expect(mode.message).toBe("Unsupported cache mode: no-cache");
    expect(current.made).toHaveLength(1);

    for (const config of [
      { compatibilityDate: "2024-11-10" },
      { compatibilityDate: "2025-01-01", compatibilityFlags: ["cache_option_disabled"] },
    ]) {
      const old = fakeRun(scripts, { config });
      const refused = await rejection(outboundFetch(old.run, "https://api.example/", { cache: "no-store" }));
      expect(refused.message).toBe("The 'cache' field on 'RequestInitializerDict' is not implemented.");
      expect(old.made).toHaveLength(0);
      const plain = await outboundFetch(old.run, "https://api.example/", { cache: undefined });
      expect(await plain.text()).toBe("fresh");
    }
    const flagged = fakeRun(scripts, {
      config: { compatibilityDate: "2024-01-01", compatibilityFlags: ["cache_option_enabled"] },
    });
    const taken = await outboundFetch(flagged.run, "https://api.example/", { cache: "no-store" });
    expect(await taken.text()).toBe("fresh");
  });

  it("follows a redirect to another script, turning a 303 into a GET", async () => {
    const methods: string[] = [];
    const { run, made } = fakeRun([
      {
        "https://x.example/": (request) => {
          methods.push(request.method);
          return new Response(null, { status: 303, headers: { location: "https://y.example/done" } });
        },
        "https://y.example/": (request) => {
          methods.push(request.method);
          return new Response("done");
        },
      },
    ]);
    const response = await outboundFetch(run, "https://x.example/start", { method: "POST", body: "x" });
    expect(await response.text()).toBe("done");
    expect(response.redirected).toBe(true);
    expect(response.url).toBe("https://y.example/done");
    expect(methods).toEqual(["POST", "GET"]);
    expect(made).toHaveLength(1);
  });

  it("returns the redirect itself with redirect: manual", async () => {
    const { run } = fakeRun([
      {
        "https://x.example/": () => new Response(null, { status: 302, headers: { location: "/elsewhere" } }),
      },
    ]);
    const response = await outboundFetch(run, "https://x.example/", { redirect: "manual" });
    expect(response.status).toBe(302);
  });

  it("is an InputError when a script answers with something other than a Response", async () => {
    const { run, failures } = fakeRun([
      { "https://x.example/": () => ({ ok: true }) as unknown as Response },
    ]);
    const error = await rejection(outboundFetch(run, "https://x.example/", undefined));
    expect(error).toBeInstanceOf(InputError);
    expect(failures).toEqual([error]);
  });

  it("is an InputError naming the script when a script throws, not the Worker's exception", async () => {
    const { run, failures } = fakeRun([
      {
        "https://x.example/": (request) => {
          const quotas = {} as Record<string, { left: number }>;
          return Response.json({ left: (quotas[request.url] as { left: number }).left });
        },
      },
    ]);
    const error = await rejection(
      outboundFetch(run, "https://x.example/quota", { method: "POST", body: "1" }),
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(
      /^the outbound script for "https:\/\/x\.example\/" threw on POST https:\/\/x\.example\/quota: TypeError: Cannot read properties of undefined/,
    );
    expect(failures).toEqual([error]);
  });
});
