/**
 * A response's `statusText` as workerd gives it. workerd fills in the reason phrase of its
 * status when a Response is made without one (`new Response("x", { status: 201 })` has
 * `"Created"`, over a binding and in the Worker that made it); undici leaves it empty. The
 * phrases are workerd 4.20260426's, read from Miniflare for every status from 200 to 599: a
 * status it has no phrase for gets its class's (`"Client Error"` for 425).
 */

const PHRASES: Readonly<Record<number, string>> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  203: "Non-Authoritative Information",
  204: "No Content",
  205: "Reset Content",
  206: "Partial Content",
  207: "Multi-Status",
  208: "Already Reported",
  226: "IM Used",
  300: "Multiple Choices",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  305: "Use Proxy",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  407: "Proxy Authentication Required",
  408: "Request Timeout",
  409: "Conflict",
  410: "Gone",
  411: "Length Required",
  412: "Precondition Failed",
  413: "Payload Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  416: "Range Not Satisfiable",
  417: "Expectation Failed",
  418: "I'm a teapot",
  421: "Misdirected Request",
  422: "Unprocessable Entity",
  423: "Locked",
  424: "Failed Dependency",
  426: "Upgrade Required",
  428: "Precondition Required",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  451: "Unavailable For Legal Reasons",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  505: "HTTP Version Not Supported",
  506: "Variant Also Negotiates",
  507: "Insufficient Storage",
  508: "Loop Detected",
  510: "Not Extended",
  511: "Network Authentication Required",
};

const CLASSES: Readonly<Record<number, string>> = {
  2: "Successful",
  3: "Redirection",
  4: "Client Error",
  5: "Server Error",
};

/** workerd's phrase for `status`, or `""` for one outside 200 to 599 (`Response.error()`'s 0). */
export function statusPhrase(status: number): string {
  return PHRASES[status] ?? CLASSES[Math.floor(status / 100)] ?? "";
}

/**
 * Makes `Response.prototype.statusText` answer workerd's phrase for a response made without one,
 * while `active()`, where the platform leaves it empty (Node). A response made with `statusText:
 * ""` answers the phrase too, where workerd keeps it empty: the two are one to undici.
 */
export function installStatusText(active: () => boolean): void {
  if (new Response(null, { status: 201 }).statusText !== "") return;
  const getter = Object.getOwnPropertyDescriptor(Response.prototype, "statusText")?.get;
  if (!getter) return;
  Object.defineProperty(Response.prototype, "statusText", {
    configurable: true,
    enumerable: true,
    get(this: Response): string {
      const text = getter.call(this) as string;
      return text === "" && active() ? statusPhrase(this.status) : text;
    },
  });
}
