/**
 * Errors that cross a binding (a service binding's RPC or fetch, a Durable Object stub), as
 * workerd delivers them; each case below was checked against Miniflare's workerd.
 *
 * - An error the other side's code threw arrives as a new error, with `remote: true`. A
 *   standard type (by its name) is kept with its message; any other name becomes an `Error`
 *   whose message starts with it (`QuotaError: over quota`); a thrown non-error is an `Error`
 *   with the text V8 gives it (`#<Object>` for an object, `[object Array]` for an array). Its
 *   stack and own properties stay behind, but for the flags the runtime reads: `retryable` and
 *   `overloaded`, when truthy, arrive as `true` (`overloaded` alone when both are set).
 * - An error that reset a Durable Object (`ctx.abort()`, a throwing `blockConcurrencyWhile`
 *   callback) arrives with `durableObjectReset: true` instead, and breaks the stub it came
 *   through: every later call on that stub fails the same way, while a new stub reaches a fresh
 *   instance.
 * - An invocation that died under the call is `Network connection lost.` with
 *   `retryable: true` (workerd marks every disconnection retryable); through a Durable Object
 *   stub it breaks the stub too.
 */

/** workerd's answer for a name the receiver does not expose as a method. */
export function notImplemented(method: string): TypeError {
  return new TypeError(`The RPC receiver does not implement the method "${method}".`);
}

/** Errors the simulation threw because they reset a Durable Object. */
const objectResets = new WeakSet<object>();

/** The error a caller sees when the invocation it called dies before answering. */
export function lostConnection(): Error {
  return Object.assign(new Error("Network connection lost."), { retryable: true });
}

/** Marks `error`, thrown in a Durable Object, as the one that reset it. */
export function resettingObject<T>(error: T): T {
  if (typeof error === "object" && error !== null) objectResets.add(error);
  return error;
}

/**
 * The error the caller gets for `error`, thrown on the other side of the call: a copy, marked
 * as remote, or as a reset of the object when it reset one.
 */
export function rethrownOverRpc(error: unknown): Error {
  const copy = copied(error);
  if (typeof error === "object" && error !== null && objectResets.has(error)) {
    return Object.assign(copy, { durableObjectReset: true });
  }
  Object.assign(copy, { remote: true });
  if (typeof error === "object" && error !== null) {
    const flags = error as { retryable?: unknown; overloaded?: unknown };
    if (flags.overloaded) Object.assign(copy, { overloaded: true });
    else if (flags.retryable) Object.assign(copy, { retryable: true });
  }
  return copy;
}

function copied(error: unknown): Error {
  if (error instanceof DOMException) return new DOMException(error.message, error.name);
  if (!(error instanceof Error)) return new Error(thrownText(error));
  return standardError(error.name, error.message) ?? new Error(`${error.name}: ${error.message}`);
}

/**
 * What workerd makes the message of a thrown non-error (compared with Miniflare): V8's text for
 * it, which names an object's constructor (`#<Object>`, `#<Order>`) rather than calling its
 * `toString`, and tags an array or an object without a prototype.
 */
function thrownText(thrown: unknown): string {
  if (typeof thrown !== "object" || thrown === null) return String(thrown);
  if (Array.isArray(thrown)) return "[object Array]";
  const prototype: unknown = Object.getPrototypeOf(thrown);
  if (prototype === null) return "[object Object]";
  const className = (prototype as { constructor?: { name?: unknown } }).constructor?.name;
  return `#<${typeof className === "string" && className !== "" ? className : "Object"}>`;
}

/** The standard error types, which cross as themselves; others cross as `Error`. */
const STANDARD_ERRORS: Readonly<Record<string, new (message: string) => Error>> = {
  Error,
  EvalError,
  RangeError,
  ReferenceError,
  SyntaxError,
  TypeError,
  URIError,
};

/** A new error of the standard type named `name`, if it names one. */
function standardError(name: string, message: string): Error | undefined {
  if (name === "AggregateError") return new AggregateError([], message);
  const Standard = Object.hasOwn(STANDARD_ERRORS, name) ? STANDARD_ERRORS[name] : undefined;
  return Standard ? new Standard(message) : undefined;
}

/** Whether `error`, from a Durable Object call, leaves the stub it came through broken. */
export function breaksStub(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const flags = error as { durableObjectReset?: unknown; retryable?: unknown };
  return flags.durableObjectReset === true || flags.retryable === true;
}

/**
 * `cause` anew, with its type, message and infrastructure flags: a broken stub fails each call
 * with the error that broke it so, and a reset object's storage each call of its old instance.
 */
export function anew(cause: Error): Error {
  const copy = copied(cause);
  const flags = cause as { durableObjectReset?: unknown; retryable?: unknown };
  if (flags.retryable === true) Object.assign(copy, { retryable: true });
  if (flags.durableObjectReset === true) Object.assign(copy, { durableObjectReset: true });
  return copy;
}
