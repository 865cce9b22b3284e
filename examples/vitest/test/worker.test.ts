/**
 * The unit tests a developer writes for the signup Worker: its fetch handler called with a fake
 * env, one request at a time, every binding call succeeding. Both versions pass them; only the
 * scenario test (signup.sim.test.ts) tells them apart.
 */

import { describe, expect, it } from "vitest";
import planted from "../worker";
import fixed from "../worker.fixed";
import { fakeEnv } from "./fake-env";

function signup(body: unknown): Request {
  return new Request("https://signup.example/signup", { method: "POST", body: JSON.stringify(body) });
}

describe.each([
  ["worker.ts", planted],
  ["worker.fixed.ts", fixed],
])("%s", (_file, worker) => {
  it("creates the account and sends one welcome mail", async () => {
    const env = fakeEnv();
    const response = await worker.fetch(signup({ email: "Ada@example.com", name: "Ada" }), env);
    expect(response.status).toBe(201);
    const { id } = (await response.json()) as { id: string };
    expect(env.mails).toEqual([{ to: "ada@example.com", name: "Ada", idempotencyKey: id }]);
    expect(env.users.get("ada@example.com")).toMatchObject({ id, welcome_message_id: "msg-1" });
  });

  it("answers 409 to a second signup for the same email and sends no second mail", async () => {
    const env = fakeEnv();
    await worker.fetch(signup({ email: "ada@example.com", name: "Ada" }), env);
    const again = await worker.fetch(signup({ email: "ada@example.com", name: "Ada L." }), env);
    expect(again.status).toBe(409);
    expect(await again.text()).toBe("already registered");
    expect(env.mails).toHaveLength(1);
  });

  it("answers 400 to a body that is not a signup", async () => {
    const env = fakeEnv();
    const response = await worker.fetch(signup({ email: "not an address" }), env);
    expect(response.status).toBe(400);
    expect(env.users.size).toBe(0);
  });

  it("answers 404 to anything but POST /signup", async () => {
    const response = await worker.fetch(new Request("https://signup.example/signup"), fakeEnv());
    expect(response.status).toBe(404);
  });
});
