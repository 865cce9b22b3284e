/**
 * The same bank, with the debit and the credit sent as one `DB.batch([...])`: D1 runs a batch
 * as one transaction, so either both happen or neither does.
 * `eutaxy check ./transfer.fixed.sim.ts` reports BOUNDED.
 */

import { bank, oneBatch } from "./worker.ts";

export default bank(oneBatch);
