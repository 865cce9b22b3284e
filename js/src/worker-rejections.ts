/**
 * A promise Worker code rejects and nothing handles, taken as workerd takes it: logged
 * (`Uncaught (in promise)`, in the run's trace) while the request goes on, instead of Node ending
 * the process with its stack trace in the middle of a check. Every other unhandled rejection in
 * the process (the user's own code in a test file that runs beside `check()`, the host's between
 * runs) goes where it would go without eutaxy: to the other listeners (vitest's reports it), or
 * else to Node's own handling (its default ends the process).
 *
 * Whose a rejection is comes from the asynchronous context it was made in, not from when it is
 * reported: Node reports a rejection once the microtasks have run out, by which time any code
 * may be running (a test's timer, the next run), so "a run is under way" says nothing about it.
 * Worker code only ever runs inside a run (and the modules' probe before the runs), and
 * everything a run does descends from `inRun`, which marks that context (an AsyncLocalStorage):
 * the promises made in it and the callbacks, timers and continuations it schedules carry the
 * mark, while code that did not start there (a test awaiting `check()`, its timers, the
 * exploration between runs) never does. Node calls the `unhandledRejection` listeners in the
 * context of the promise: the one it was created in up to Node 22, the one it was rejected in
 * from Node 24 (AsyncContextFrame). A Worker's rejection has the mark either way, since both
 * happen inside a run; a foreign one has it in neither. What a run does besides the Worker's own
 * code (the bindings that answer it, the scenario's scripted services standing in for other
 * Workers) is the platform the Worker runs on, so a rejection left there is the Worker's as well,
 * as a binding call the Worker leaves unhandled is in workerd.
 */

import { AsyncLocalStorage } from "node:async_hooks";
import { inspect } from "node:util";
import { hostListener, real, simulating, uncaughtInPromise } from "./sim/globals.ts";

/** Runs `work` as part of a run: a rejection made in it, or in what it starts, is the Worker's. */
export type InRun = <T>(work: () => T) => T;

const runs = new AsyncLocalStorage<true>();
const inRun: InRun = (work) => runs.run(true, work);
const unmarked: InRun = (work) => work();

/** Checks under way in this thread; the listeners are attached while there is one. */
let checks = 0;

/**
 * Whether the checks under way tell rejections apart by context (`runs`): when something else in
 * the process listens for unhandled rejections as the first check starts (a test framework, or
 * a program that handles its own), whose rejections eutaxy must leave to it. Otherwise (the
 * `eutaxy` command, a program without such a listener) they are told apart by time: one reported
 * while a run is active is the Worker's, and the rest are dropped while a check is under way.
 * Marking every run's context puts a hook on every promise a run makes, which on Node 20 costs
 * a few percent of a run. (Node calls every listener of a rejection: another listener hears the
 * Worker's as well, which vitest's takes as handled, since eutaxy's listens.)
 */
let byContext = false;

/**
 * Runs `work` (a check's exploration) with the Worker's unhandled rejections logged, handing it
 * the `inRun` that marks where Worker code runs.
 */
export async function withWorkerRejections<T>(work: (inRun: InRun) => Promise<T>): Promise<T> {
  if (checks++ === 0) {
    byContext = process.listenerCount("unhandledRejection") > 0;
    attach();
  }
  try {
    return await work(byContext ? inRun : unmarked);
  } finally {
    // Node reports a rejection nothing handled once the microtasks have run out: one turn more,
    // and the last run's are reported while the listeners still take them.
    await new Promise((resolve) => real.setImmediate(resolve));
    if (--checks === 0) detach();
  }
}

/**
 * Hears every unhandled rejection first (prepended). A foreign one, when other listeners will
 * hear it, is left to them with eutaxy's listeners taken off for the while, so that they find the
 * process as it would be without eutaxy: vitest's takes a rejection as handled by user code
 * whenever another listener is attached, and would report nothing. `last`, called after them,
 * puts them back before the next rejection. With no other listener, Node's own handling is done
 * here, since a listener being attached tells Node the rejection was handled.
 */
function first(reason: unknown, promise: Promise<unknown>): void {
  if (!byContext) {
    // Nothing else listens: the Worker's while a run is active; one reported just after a run
    // (made in its last microtasks) has no run left to log it.
    if (simulating()) uncaughtInPromise(reason, promise);
    return;
  }
  if (runs.getStore()) {
    uncaughtInPromise(reason, promise);
    return;
  }
  const others = process.listeners("unhandledRejection").filter((l) => l !== first && l !== last);
  if (others.length > 0) {
    detach();
    // Should another listener throw, `last` is not called: they listen again after this turn.
    process.nextTick(last);
    return;
  }
  asNodeDoes(reason);
}

/** Called after the other listeners a foreign rejection was left to: eutaxy's listen again. */
function last(): void {
  if (checks > 0 && !process.listeners("unhandledRejection").includes(first)) attach();
}

// Put back during a run (`last`), they are still eutaxy's, not the run's Worker's.
hostListener(first);
hostListener(last);

function attach(): void {
  process.prependListener("unhandledRejection", first);
  process.on("unhandledRejection", last);
}

function detach(): void {
  process.off("unhandledRejection", first);
  process.off("unhandledRejection", last);
}

/**
 * What Node does with an unhandled rejection that no listener takes, by its
 * `--unhandled-rejections` mode: `throw` (the default) raises it as an uncaught exception, which
 * ends the process unless an `uncaughtException` listener takes it; `warn-with-error-code` warns
 * and sets the exit code. `strict` raised it already, before the listeners were called, and
 * `warn` warns whatever the listeners do; `none` does nothing.
 */
function asNodeDoes(reason: unknown): void {
  const mode = rejectionsMode();
  if (mode === "throw") throw asError(reason);
  if (mode === "warn-with-error-code") {
    process.emitWarning(asError(reason).stack ?? String(reason), "UnhandledPromiseRejectionWarning");
    process.exitCode = 1;
  }
}

/** Node's `--unhandled-rejections` mode, as its command line and `NODE_OPTIONS` give it (the last one counts). */
function rejectionsMode(): string {
  const flags = [...(process.env.NODE_OPTIONS ?? "").split(/\s+/), ...process.execArgv];
  let mode = "throw";
  flags.forEach((flag, i) => {
    if (flag.startsWith("--unhandled-rejections=")) mode = flag.slice("--unhandled-rejections=".length);
    else if (flag === "--unhandled-rejections" && flags[i + 1]) mode = flags[i + 1] as string;
  });
  return mode;
}

/** The reason as the error Node raises for it: itself when it is one, else Node's wrapper. */
function asError(reason: unknown): Error {
  if (reason instanceof Error) return reason;
  const error = new Error(
    "This error originated either by throwing inside of an async function without a catch block, " +
      `or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason "${inspect(reason)}".`,
  );
  return Object.assign(error, { code: "ERR_UNHANDLED_REJECTION" });
}
