/**
 * Places a run's steps on the lifelines of a sequence diagram: the outside world that starts
 * events (the client, a queue producer, the cron trigger), one lifeline per invocation, and one
 * per binding or store an effect reaches. Each step becomes one row: an arrow between two
 * lifelines, or a mark on one.
 */

import type { Step } from "./trace.ts";

export type LaneKind = "source" | "invocation" | "store";

export interface Lane {
  readonly key: string;
  readonly kind: LaneKind;
  readonly title: string;
  readonly subtitle: string;
}

export interface Row {
  readonly step: Step;
  /** Lane indices; equal for a mark on one lifeline, -1 for a note across the whole diagram. */
  readonly from: number;
  readonly to: number;
  /** A return (answer, result) is drawn dashed, as sequence diagrams do. */
  readonly dashed: boolean;
}

export interface Layout {
  readonly lanes: readonly Lane[];
  readonly rows: readonly Row[];
}

/** What an effect's label names: `D1:payments/DB run`, `fetch POST https://api.example/v1`. */
export interface Target {
  readonly key: string;
  readonly title: string;
  readonly subtitle: string;
  /** The call on the binding: `run`, `charge`, `POST /v1/charges`. */
  readonly call: string;
}

const STORE_KINDS: Readonly<Record<string, string>> = {
  D1: "D1 database",
  KV: "KV namespace",
  R2: "R2 bucket",
  DO: "Durable Object",
  Queue: "queue",
  Service: "service binding (scripted)",
};

export function targetOf(label: string): Target {
  const binding = label.match(/^(D1|KV|R2|DO|Queue|Service):(\S+) ([\s\S]*)$/);
  if (binding) {
    const [, kind, name, call] = binding as unknown as [string, string, string, string];
    const title = `${kind}:${name}`;
    return { key: `store:${title}`, title, subtitle: STORE_KINDS[kind] ?? kind, call };
  }
  const fetch = label.match(/^fetch (\S+) (\S+)$/);
  if (fetch) {
    const [, method, url] = fetch as unknown as [string, string, string];
    const origin = url.match(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i)?.[0] ?? url;
    return {
      key: `store:fetch ${origin}`,
      title: `fetch ${origin}`,
      subtitle: "outbound fetch",
      call: `${method} ${url.slice(origin.length) || "/"}`,
    };
  }
  const name = label.split(" ")[0] ?? label;
  return { key: `store:${name}`, title: name, subtitle: "binding", call: label.slice(name.length + 1) };
}

/** `req-2#1/0` → `req-2#1` and effect 0; undefined for a top-level invocation. */
export function parentOf(invocation: string): { parent: string; effect: number } | undefined {
  const m = invocation.match(/^(.*)\/(\d+)$/);
  return m ? { parent: m[1] as string, effect: Number(m[2]) } : undefined;
}

/**
 * Why the client sends a request's delivery `invocation` (`req-1#2`): the delivery before it got
 * no answer, or it got one the client resends on (`http(…, { resendOn })`), which the trace tells
 * by an `answered` step of that delivery before the resend.
 */
export function resendCause(steps: readonly Step[], invocation: string): string {
  const { event, delivery } = deliveryOf(invocation);
  const before = `${event}#${delivery - 1}`;
  let status: string | undefined;
  for (const step of steps) {
    if (step.kind === "redeliver" && step.invocation === invocation) break;
    if (step.kind === "answered" && step.invocation === before) status = step.status;
  }
  return status === undefined ? "no answer" : `${before} was answered ${status}`;
}

/** `req-2#3` → `req-2` and 3. */
export function deliveryOf(invocation: string): { event: string; delivery: number } {
  const m = invocation.match(/^(.*)#(\d+)$/);
  return m ? { event: m[1] as string, delivery: Number(m[2]) } : { event: invocation, delivery: 1 };
}

const RESENDS_ON_ANSWERS = "sends each request; resends when it gets no answer, or an answer it resends on";

const SOURCES: Readonly<Record<string, { title: string; subtitle: string }>> = {
  req: { title: "Client", subtitle: "sends each request; resends when it gets no answer" },
  msg: { title: "Producer", subtitle: "sends messages to a queue from outside" },
  cron: { title: "Cron trigger", subtitle: "ticks of the scheduled handler" },
  alarm: { title: "Alarms", subtitle: "Durable Object alarms, run by the platform" },
};

export function layout(steps: readonly Step[]): Layout {
  const lanes: Lane[] = [];
  const index = new Map<string, number>();
  const effects = new Map<string, Step & { kind: "effect" }>();
  for (const step of steps)
    if (step.kind === "effect") effects.set(`${step.invocation}:${step.effect}`, step);
  // A batch is delivered by its queue: the queue a batch ended on, else the last one sent to.
  const batchQueue = new Map<string, string>();
  for (const step of steps) if (step.kind === "batch-end") batchQueue.set(step.invocation, step.queue);
  let lastQueue: string | undefined;
  const seen = new Set<string>();
  for (const step of steps) if ("invocation" in step) seen.add(step.invocation);

  const sources: Lane[] = [];
  const invocations: Lane[] = [];
  const stores: Lane[] = [];
  const keyed = new Map<string, Lane>();
  const add = (lane: Lane, into: Lane[], at = into.length): string => {
    if (!keyed.has(lane.key)) {
      keyed.set(lane.key, lane);
      into.splice(at, 0, lane);
    }
    return lane.key;
  };

  const storeLane = (target: Target): string =>
    add({ key: target.key, kind: "store", title: target.title, subtitle: target.subtitle }, stores);

  /** The lane an invocation's steps are drawn on. */
  const invocationLane = (invocation: string): string => {
    const hosted = parentOf(invocation);
    if (!hosted) {
      const { event, delivery } = deliveryOf(invocation);
      const kind = event.replace(/-\d+$/, "");
      const subtitle =
        kind === "req"
          ? delivery === 1
            ? `request ${event}`
            : `request ${event}, resend ${delivery - 1}`
          : delivery === 1
            ? `delivery of ${event}`
            : `redelivery ${delivery - 1} of ${event}`;
      return add({ key: `inv:${invocation}`, kind: "invocation", title: invocation, subtitle }, invocations);
    }
    const effect = effects.get(`${hosted.parent}:${hosted.effect}`);
    const target = effect ? targetOf(effect.label) : undefined;
    // A Durable Object is one object across the calls it serves: its invocations share its lane.
    if (target?.key.startsWith("store:DO:")) return storeLane(target);
    const parentKey = invocationLane(hosted.parent);
    // A callee's lifeline sits right of its caller's (after the caller's other callees).
    let at = invocations.findIndex((lane) => lane.key === parentKey) + 1;
    while (at > 0 && at < invocations.length && invocations[at]?.title.startsWith(`${hosted.parent}/`)) at++;
    const by = effect
      ? `${target?.title ?? effect.label}, hosted by ${hosted.parent} effect #${hosted.effect}`
      : "";
    return add(
      { key: `inv:${invocation}`, kind: "invocation", title: invocation, subtitle: by },
      invocations,
      at,
    );
  };

  const resendsOnAnswers = steps.some(
    (step) =>
      step.kind === "redeliver" &&
      step.refused === undefined &&
      resendCause(steps, step.invocation) !== "no answer",
  );

  const queueLane = (queue: string): string => storeLane(targetOf(`Queue:${queue} deliver`));

  /** Where a top-level invocation's deliveries come from and its answers go. */
  const sourceLane = (invocation: string): string => {
    const root = invocation.split("/")[0] ?? invocation;
    const { event } = deliveryOf(root);
    const kind = event.replace(/-\d+$/, "");
    if (kind === "batch") {
      const queue = batchQueue.get(root) ?? lastQueue;
      if (queue !== undefined) return queueLane(queue);
    }
    const source = SOURCES[kind] ?? { title: "Platform", subtitle: "the platform's own work" };
    // A client that resends on some answers too (`resendOn`) is not the one the default says.
    const subtitle = kind === "req" && resendsOnAnswers ? RESENDS_ON_ANSWERS : source.subtitle;
    return add({ key: `src:${source.title}`, kind: "source", ...source, subtitle }, sources);
  };

  /** Where an effect goes: a hosted callee's own lifeline, else the binding's. */
  const effectTarget = (step: Step & { kind: "effect" }): string => {
    const target = targetOf(step.label);
    const child = `${step.invocation}/${step.effect}`;
    if (seen.has(child) && target.key.startsWith("store:Service:")) return invocationLane(child);
    return storeLane(target);
  };

  const pending: { step: Step; from: string; to: string; dashed: boolean }[] = [];
  let lastTarget: string | undefined;
  for (const step of steps) {
    switch (step.kind) {
      case "deliver": {
        const from = sourceLane(step.invocation);
        pending.push({ step, from, to: invocationLane(step.invocation), dashed: false });
        break;
      }
      case "effect": {
        const from = invocationLane(step.invocation);
        lastTarget = effectTarget(step);
        pending.push({ step, from, to: lastTarget, dashed: false });
        break;
      }
      case "returned":
      case "threw":
      case "answered":
      case "finished": {
        const from = invocationLane(step.invocation);
        const hosted = parentOf(step.invocation);
        const to = hosted ? invocationLane(hosted.parent) : sourceLane(step.invocation);
        pending.push({ step, from, to, dashed: true });
        break;
      }
      case "died": {
        const lane = invocationLane(step.invocation);
        pending.push({ step, from: lane, to: lane, dashed: false });
        break;
      }
      case "redeliver": {
        const lane = sourceLane(step.invocation);
        pending.push({ step, from: lane, to: lane, dashed: false });
        break;
      }
      case "sent": {
        lastQueue = step.queue;
        pending.push({ step, from: sourceLane(step.event), to: queueLane(step.queue), dashed: false });
        break;
      }
      case "batch-end": {
        const from = invocationLane(step.invocation);
        pending.push({ step, from, to: queueLane(step.queue), dashed: true });
        break;
      }
      case "note": {
        // A Durable Object's reset is told right after the call it happened at.
        const lane =
          /^Durable Object /.test(step.text) && lastTarget?.startsWith("store:DO:") ? lastTarget : "";
        pending.push({ step, from: lane, to: lane, dashed: false });
        break;
      }
    }
  }
  for (const lane of [
    ...sources,
    ...stores.filter(isQueue),
    ...invocations,
    ...stores.filter((l) => !isQueue(l)),
  ]) {
    index.set(lane.key, lanes.push(lane) - 1);
  }
  const at = (key: string): number => index.get(key) ?? -1;
  return {
    lanes,
    rows: pending.map((p) => ({ step: p.step, from: at(p.from), to: at(p.to), dashed: p.dashed })),
  };
}

/** Queues deliver batches, so they stand left of the invocations, by the client. */
function isQueue(lane: Lane): boolean {
  return lane.key.startsWith("store:Queue:");
}
