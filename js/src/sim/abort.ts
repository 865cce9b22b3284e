/**
 * What workerd rejects a call with when its signal aborts it while the runtime holds it (a
 * `scheduler.wait`, an outbound `fetch` waiting for its answer): not the signal's reason itself
 * but the reason as it comes back out of the runtime, a copy, as Miniflare's workerd answers
 * (4.20260426): a DOMException of the same name and message (`TimeoutError`, `AbortError`), an
 * Error of the same standard type and message (a `TypeError` stays one), a string as an Error's
 * message, an object as workerd words it (`#<Object>`). Code that tells its own deadline from
 * another failure by identity (`error === signal.reason`) or by `typeof` sees what it sees there.
 */
export function reasonFromRuntime(reason: unknown): unknown {
  if (reason instanceof DOMException) return new DOMException(reason.message, reason.name);
  if (reason instanceof Error) {
    const Standard = STANDARD_ERRORS[reason.name as keyof typeof STANDARD_ERRORS];
    return Standard && reason instanceof Standard ? new Standard(reason.message) : new Error(reason.message);
  }
  if (reason !== null && typeof reason === "object") {
    const name = (reason as { constructor?: { name?: unknown } }).constructor?.name;
    return new Error(`#<${typeof name === "string" && name !== "" ? name : "Object"}>`);
  }
  return new Error(String(reason));
}

const STANDARD_ERRORS = { TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError } as const;

/** workerd's reason for an `abort()` given none (Node's own says "This operation was aborted"). */
export function defaultAbortReason(): DOMException {
  return new DOMException("The operation was aborted", "AbortError");
}
