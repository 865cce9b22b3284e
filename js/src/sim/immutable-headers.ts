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

/** The platform's `headers` getter of `Class`, Request or Response. */
function headersGetter(Class: typeof Request | typeof Response): () => Headers {
  const getter = Object.getOwnPropertyDescriptor(Class.prototype, "headers")?.get;
  if (!getter) throw new Error("the platform's Request and Response have a headers getter");
  return getter as () => Headers;
}

/**
 * `message`, its headers (and those of its clones) made immutable; returned for chaining. The
 * immutable view is made when the headers are first read.
 */
export function withImmutableHeaders<T extends Request | Response>(message: T): T {
  const platformHeaders = headersGetter(message instanceof Request ? Request : Response);
  const clone = message.clone;
  let view: Headers | undefined;
  Object.defineProperty(message, "headers", {
    get: () => {
      view ??= new ImmutableHeaders(platformHeaders.call(message));
      return view;
    },
    configurable: true,
  });
  Object.defineProperty(message, "clone", {
    value: () => withImmutableHeaders((clone as () => T).call(message)),
    configurable: true,
    writable: true,
  });
  return message;
}

/** Where an `IncomingRequest` keeps its immutable view of its headers, once read. */
const VIEW = Symbol("immutable headers");

/**
 * The request a handler is given by its client, made so that nothing is defined per request:
 * its class's `headers` getter gives the immutable view, its `clone()` a clone with immutable
 * headers. Named `Request`, as the class a Worker sees is.
 */
class IncomingRequest extends Request {}
Object.defineProperty(IncomingRequest, "name", { value: "Request" });
{
  const platformHeaders = headersGetter(Request);
  const platformClone = Request.prototype.clone;
  Object.defineProperties(IncomingRequest.prototype, {
    headers: {
      get(this: IncomingRequest & { [VIEW]?: Headers }): Headers {
        this[VIEW] ??= new ImmutableHeaders(platformHeaders.call(this));
        return this[VIEW];
      },
      configurable: true,
    },
    clone: {
      value(this: IncomingRequest): Request {
        return withImmutableHeaders(platformClone.call(this));
      },
      configurable: true,
      writable: true,
    },
  });
}

/**
 * A request as a handler gets it: from its client (a URL and its parts), or over a binding (a
 * copy of the caller's, taking over its body); immutable headers either way.
 */
export function incomingRequest(input: string | Request, init?: RequestInit): Request {
  return new IncomingRequest(input, init);
}

/** Whether `request` is one a handler was given (its body a stream from its client). */
export function isIncomingRequest(request: Request): boolean {
  return request instanceof IncomingRequest;
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
 * What a Worker's handler answered `request`, as the Worker that fetched it over a binding gets
 * it: a response of its own (the same status, headers and body, which it takes over; no body
 * for a HEAD request, as workerd strips it), as `fetched`.
 */
export function fetchedOverBinding(response: Response, request: Request): Response {
  const copy = new Response(request.method === "HEAD" ? null : response.body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  return fetched(copy, request.url);
}
