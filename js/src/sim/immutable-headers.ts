/**
 * Headers workerd makes immutable: those of the request a Worker's handler is given, and of a
 * response `fetch()` answers, over a service binding, a Durable Object stub or the network.
 * Changing them throws workerd's TypeError (compared with Miniflare 4.20260426), and so does
 * changing a clone's; a copy (`new Response(res.body, res)`, `new Request(req)`) is the Worker's
 * to change. A proxy that sets a CORS header on the response it fetched fails in production: it
 * fails here too.
 */

/** workerd's error for a change to immutable headers. */
const IMMUTABLE = "Can't modify immutable headers.";

/** Headers whose changes throw; reading them is a Headers' own. */
class ImmutableHeaders extends Headers {}
for (const change of ["set", "append", "delete"]) {
  Object.defineProperty(ImmutableHeaders.prototype, change, {
    value: () => {
      throw new TypeError(IMMUTABLE);
    },
    configurable: true,
    writable: true,
  });
}

/** `message`, its headers (and those of its clones) made immutable; returned for chaining. */
export function withImmutableHeaders<T extends Request | Response>(message: T): T {
  const clone = (message.clone as () => T).bind(message);
  Object.defineProperty(message, "headers", {
    value: new ImmutableHeaders(message.headers),
    configurable: true,
  });
  Object.defineProperty(message, "clone", {
    value: () => withImmutableHeaders(clone()),
    configurable: true,
    writable: true,
  });
  return message;
}

/**
 * The response `fetch()` answers the Worker: `url` the request's (the last one's, after
 * redirects), `redirected` when it followed one, immutable headers.
 */
export function fetched(response: Response, url: string, redirected = false): Response {
  Object.defineProperty(response, "url", { value: url, enumerable: true });
  if (redirected) Object.defineProperty(response, "redirected", { value: true, enumerable: true });
  return withImmutableHeaders(response);
}

/**
 * What a Worker's handler answered, as the Worker that fetched it over a binding gets it: a
 * response of its own (the same status, headers and body, which it takes over), as `fetched`.
 */
export function fetchedOverBinding(response: Response, url: string): Response {
  const copy = new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  return fetched(copy, url);
}
