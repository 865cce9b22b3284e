/**
 * `request.cf` of the requests the `http` driver sends: what Miniflare 4.20260426 gives a
 * request when it cannot ask Cloudflare (a client in Austin, Texas, over TLS 1.3), with the
 * scenario's own fields (`{ cf: { country: "DE" } }`) over it. A fresh copy per delivery, so a
 * Worker that changes it changes nothing of another's.
 */

const DEFAULT_CF: Readonly<Record<string, unknown>> = {
  asOrganization: "",
  asn: 395747,
  colo: "DFW",
  city: "Austin",
  region: "Texas",
  regionCode: "TX",
  metroCode: "635",
  postalCode: "78701",
  country: "US",
  continent: "NA",
  timezone: "America/Chicago",
  latitude: "30.27130",
  longitude: "-97.74260",
  clientTcpRtt: 0,
  httpProtocol: "HTTP/1.1",
  requestPriority: "weight=192;exclusive=0",
  tlsCipher: "AEAD-AES128-GCM-SHA256",
  tlsVersion: "TLSv1.3",
  edgeRequestKeepAliveStatus: 0,
  clientAcceptEncoding: "gzip, deflate",
};

/** The `cf` of one delivery: the default, the scenario's fields over it. */
export function requestCf(fields: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  return structuredClone({ ...DEFAULT_CF, ...fields });
}
