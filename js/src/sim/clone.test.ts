import { describe, expect, it, vi } from "vitest";
import { cloneValue, refuseOverRpc } from "./clone.ts";
import { RpcTarget } from "./workers-module.ts";

/** Whatever `structuredClone` answers or throws for `value`, `cloneValue` must too. */
function expectSameAsStructuredClone(make: () => unknown): void {
  let expected: unknown;
  let expectedError: unknown;
  try {
    expected = structuredClone(make());
  } catch (error) {
    expectedError = error;
  }
  if (expectedError !== undefined) {
    expect(() => cloneValue(make())).toThrow((expectedError as Error).message);
    return;
  }
  const value = make();
  const copy = cloneValue(value);
  expect(copy).toStrictEqual(expected);
  if (typeof value === "object" && value !== null) expect(copy).not.toBe(value);
}

class Charge {
  constructor(readonly chargeId: number) {}
}

describe("cloneValue: the same result as structuredClone", () => {
  const cases: Record<string, () => unknown> = {
    string: () => "order:o-1",
    "negative zero": () => -0,
    NaN: () => Number.NaN,
    bigint: () => 2n ** 70n,
    boolean: () => true,
    null: () => null,
    undefined: () => undefined,
    "RPC arguments": () => ["order:o-1", "o-1", 2500],
    "nested plain values": () => ({ a: [1, { b: "x", c: null, d: undefined }], e: { f: [[]] } }),
    "integer-like keys, in order": () => ({ b: 1, 2: "two", a: 3, 1: "one" }),
    "null-prototype object": () => Object.assign(Object.create(null), { a: 1 }),
    "sparse array": () => {
      const holes: number[] = [1];
      holes[2] = 3;
      return holes;
    },
    "array with a named property": () => Object.assign([1, 2], { extra: true }),
    Date: () => ({ at: new Date(0) }),
    Map: () => [new Map([["k", { v: 1 }]])],
    "typed array": () => ({ bytes: new Uint8Array([1, 2, 3]) }),
    "own __proto__ key": () => JSON.parse('{"__proto__": {"x": 1}, "y": 2}'),
    "deep nesting": () => {
      let value: unknown = "leaf";
      for (let i = 0; i < 100; i++) value = [value];
      return value;
    },
    symbol: () => [Symbol("s")],
    Proxy: () => ({ inner: new Proxy({}, {}) }),
  };
  for (const [name, make] of Object.entries(cases)) {
    it(name, () => expectSameAsStructuredClone(make));
  }
});

describe("cloneValue: what Workers RPC refuses", () => {
  it("refuses an instance of the Worker's own class, as Workers RPC does", () => {
    expect(() => cloneValue({ charge: new Charge(7) })).toThrow(
      'Could not serialize object of type "Charge". This type does not support serialization.',
    );
    expect(() => cloneValue([new Charge(7)])).toThrow(expect.objectContaining({ name: "DataCloneError" }));
  });

  it("refuses a platform object it is told of, a Proxy among them, by the type workerd names", () => {
    const stub = new Proxy({}, {});
    refuseOverRpc(stub, "DurableObject");
    expect(() => cloneValue([{ to: stub }, 1])).toThrow(
      'Could not serialize object of type "DurableObject". This type does not support serialization.',
    );
    expect(() => cloneValue(stub)).toThrow(expect.objectContaining({ name: "DataCloneError" }));
  });

  it("copies errors, a custom error class's too, and platform types as the clone does", () => {
    class Declined extends Error {}
    expect(cloneValue({ error: new Declined("no") }).error).toBeInstanceOf(Error);
    expect(cloneValue({ at: new Date(0), pattern: /a+/g }).pattern).toEqual(/a+/g);
  });
});

describe("cloneValue: what Workers RPC carries beyond the clone", () => {
  it("moves a Request's body: the copy reads it, the sender's is used", async () => {
    const request = new Request("https://a.example/x", { method: "PUT", headers: { k: "v" }, body: "b" });
    const copy = cloneValue({ request }).request;
    expect(copy).not.toBe(request);
    expect([copy.method, copy.url, copy.headers.get("k")]).toEqual(["PUT", "https://a.example/x", "v"]);
    expect(await copy.text()).toBe("b");
    expect(request.bodyUsed).toBe(true);
  });

  it("gives a function as a stub: a call runs the original and answers a promise of a copy", async () => {
    const seen: unknown[] = [];
    const { callback } = cloneValue({
      callback: (item: { n: number }) => {
        seen.push(item);
        return { doubled: item.n * 2 };
      },
    });
    const arg = { n: 4 };
    const answer = callback(arg);
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toEqual({ doubled: 8 });
    expect(seen).toEqual([{ n: 4 }]);
    expect(seen[0]).not.toBe(arg);
  });

  it("gives an RpcTarget as a stub: methods and getters answer, own fields do not", async () => {
    class Tally extends RpcTarget {
      count = 1;
      add(n: number): number {
        this.count += n;
        return this.count;
      }
      get twice(): number {
        return this.count * 2;
      }
    }
    const tally = new Tally();
    const stub = cloneValue(tally) as unknown as {
      add(n: number): Promise<number>;
      twice: Promise<number>;
      count: Promise<number>;
    };
    expect(typeof stub).toBe("function");
    expect(await stub.add(2)).toBe(3);
    expect(tally.count).toBe(3);
    expect(await stub.twice).toBe(6);
    await expect(Promise.resolve(stub.count)).rejects.toThrow(
      'The RPC receiver does not implement the method "count".',
    );
  });

  it("passes a stub on as itself: it still reaches the object it was made for", async () => {
    class Box extends RpcTarget {
      n = 1;
      bump(): number {
        return ++this.n;
      }
    }
    const box = new Box();
    const stub = cloneValue(box) as unknown as { bump(): Promise<number> };
    const passed = cloneValue({ stub }).stub;
    expect(passed).toBe(stub);
    expect(await passed.bump()).toBe(2);
    const fn = cloneValue(() => 7);
    expect(cloneValue([fn])[0]).toBe(fn);
  });

  it("copies a Response with its status and headers, and Headers, alone or in arrays", async () => {
    const [response, headers] = cloneValue([
      new Response("r", { status: 202, statusText: "Queued", headers: { h: "1" } }),
      new Headers({ a: "1" }),
    ] as const);
    expect([response.status, response.statusText, response.headers.get("h")]).toEqual([202, "Queued", "1"]);
    expect(await response.text()).toBe("r");
    expect(headers.get("a")).toBe("1");
  });
});

describe("cloneValue: references", () => {
  it("keeps a value shared twice shared once in the copy", () => {
    const shared = { id: 1 };
    const copy = cloneValue({ a: shared, b: [shared] });
    expect(copy.a).toBe(copy.b[0]);
    expect(copy.a).not.toBe(shared);
  });

  it("copies a cycle as a cycle", () => {
    const value: { self?: unknown; list: unknown[] } = { list: [] };
    value.self = value;
    value.list.push(value);
    const copy = cloneValue(value);
    expect(copy.self).toBe(copy);
    expect(copy.list[0]).toBe(copy);
  });

  it("runs a getter once, as structuredClone does", () => {
    let reads = 0;
    const value = {
      plain: [1, 2],
      get computed() {
        reads++;
        return reads;
      },
    };
    expect(cloneValue(value)).toStrictEqual({ plain: [1, 2], computed: 1 });
    expect(reads).toBe(1);
  });
});

describe("cloneValue: the direct copy", () => {
  it("copies plain values without structuredClone, and leaves the rest to it", () => {
    const spy = vi.spyOn(globalThis, "structuredClone");
    try {
      cloneValue(["order:o-1", "o-1", 2500]);
      cloneValue({ chargeId: 1, tags: ["a"] });
      expect(spy).not.toHaveBeenCalled();
      cloneValue({ at: new Date(0) });
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });
});
