/**
 * The same store, made safe to resend: the idempotency key is derived from the order, so a
 * resend after a lost answer carries the key of the first attempt and the payment API hands
 * back the charge it already made. `eutaxy check ./pay.fixed.sim.ts` reports BOUNDED.
 */

import { store } from "./worker.ts";

export default store((orderId) => `order-${orderId}`);
