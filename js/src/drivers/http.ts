/**
 * The `http` driver: a client that sends each request in order to the Worker under check and
 * resends a request that got no answer while it has retries left. Request `i` is event
 * `req-<i>`; its deliveries are `req-<i>#1`, `req-<i>#2`, ….
 */

import type { HttpDriver, HttpRequestSpec } from "../cloudflare.ts";

export interface HttpEvent {
  readonly id: string;
  /** How many times the client resends this request after no answer. */
  readonly retries: number;
  /** A fresh Request for one delivery: a resend carries the same method, headers and body. */
  request(): Request;
}

export function httpEvents(driver: HttpDriver, host: string): HttpEvent[] {
  return driver.requests.map((spec, i) => ({
    id: `req-${i + 1}`,
    retries: driver.retries,
    request: () => toRequest(spec, host),
  }));
}

function toRequest(spec: HttpRequestSpec, host: string): Request {
  const headers = new Headers(spec.headers);
  let body: string | undefined;
  if (spec.body !== undefined) {
    if (typeof spec.body === "string") {
      body = spec.body;
    } else {
      body = JSON.stringify(spec.body);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
    }
  }
  const method = spec.method ?? (body === undefined ? "GET" : "POST");
  return new Request(`https://${host}${spec.path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
}
