/**
 * The requests every side of the benchmark sends: the service-binding example's two payments
 * (`o-1` for 2500 cents, `o-2` for 900), then more orders for the larger scenario. The bench's
 * scenarios, the bare floor and the Miniflare runs all take them from here, so they send the same.
 */

export interface OrderRequest {
  readonly path: string;
  readonly body: { readonly amountCents: number };
}

/** The first `count` orders; the first two are the example's. */
export function orderRequests(count: number): OrderRequest[] {
  return Array.from({ length: count }, (_, i) => ({
    path: `/orders/o-${i + 1}/pay`,
    body: { amountCents: i === 0 ? 2500 : i === 1 ? 900 : 1000 + 100 * i },
  }));
}
