import { d1Schema, defineScenario, http, invariant, service } from "eutaxy/cloudflare";
import type { WelcomeMail } from "./worker";

// Two people sign up, and the first signs up again later (that one is rightly answered 409).
const signups = [
  { email: "ada@example.com", name: "Ada" },
  { email: "grace@example.com", name: "Grace" },
  { email: "ada@example.com", name: "Ada L." },
];

export default defineScenario({
  name: "signup-fixed",
  worker: { entry: "./worker.fixed.ts", config: "./wrangler.jsonc" },
  setup: [
    d1Schema("DB", "./schema.sql"),
    // The mailer is another team's Worker; its documented contract is scripted here: one mail
    // per idempotency key, so the same key always gets the same message id.
    service("MAILER", {
      sendWelcome: (mail: WelcomeMail) => ({ messageId: `welcome-${mail.idempotencyKey}` }),
    }),
  ],
  // A client resends a signup that got no answer, up to twice.
  drive: http(
    signups.map((body) => ({ path: "/signup", body })),
    { retries: 2 },
  ),
  invariants: [
    // A client told that its signup went through (201) or that the account exists (409) counts on
    // the welcome mail. One told that it failed (500), or left without an answer, signs up again.
    invariant("answered-signups-are-welcomed", (state) => {
      for (const [i, signup] of signups.entries()) {
        const answers = state.responses.filter((r) => r.event === `req-${i + 1}` && r.status !== 0);
        const status = answers.at(-1)?.status;
        if (status !== 201 && status !== 409) continue;
        const [account] = state.d1("DB", "SELECT welcomed_at FROM users WHERE email = ?", signup.email);
        if (!account?.welcomed_at) return `${signup.email} was answered ${status}, but was never sent the welcome mail`;
      }
      return true;
    }),
  ],
  bounds: { maxFaultsPerRun: 1, maxRedeliveries: 2, maxConcurrentInvocations: 1, budgetMs: 5000 },
});
