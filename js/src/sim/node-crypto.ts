/**
 * `node:crypto` as Worker code gets it: the platform's module, except where it draws randomness
 * (`randomBytes`, `randomFill`, `randomFillSync`, `randomInt`, `randomUUID`, `getRandomValues`)
 * or reaches Web Crypto (`webcrypto`, `subtle`): those go through the global `crypto`, which the
 * simulation makes deterministic (globals.ts), so a Worker importing them draws from its run's
 * stream like one calling `crypto.randomUUID()`. Everything else (hashes, HMACs, ciphers) is the
 * platform's own, found through the prototype, so nothing of it is evaluated before it is used.
 */

type Callback<T> = (error: Error | null, value?: T) => void;

/** Web Crypto's most bytes per `getRandomValues` call. */
const ENTROPY_MAX = 65_536;

export function simulatedNodeCrypto(platform: object): object {
  /** Fills `buffer` from `offset` for `size`, both counted in its elements, as Node counts them. */
  const fill = (buffer: ArrayBufferView | ArrayBuffer, offset = 0, size?: number): void => {
    const bytes = ArrayBuffer.isView(buffer)
      ? new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
      : new Uint8Array(buffer);
    const element =
      ArrayBuffer.isView(buffer) && "BYTES_PER_ELEMENT" in buffer ? (buffer.BYTES_PER_ELEMENT as number) : 1;
    const from = offset * element;
    const end = size === undefined ? bytes.length : from + size * element;
    for (let at = from; at < end; at += ENTROPY_MAX) {
      crypto.getRandomValues(bytes.subarray(at, Math.min(end, at + ENTROPY_MAX)));
    }
  };
  const later = <T>(callback: Callback<T>, value: T) => queueMicrotask(() => callback(null, value));
  const own = {
    randomBytes(size: number, callback?: Callback<Uint8Array>) {
      const bytes = Buffer.alloc(size);
      fill(bytes);
      if (callback) return later(callback, bytes);
      return bytes;
    },
    randomFillSync<T extends ArrayBufferView | ArrayBuffer>(buffer: T, offset = 0, size?: number): T {
      fill(buffer, offset, size);
      return buffer;
    },
    randomFill<T extends ArrayBufferView | ArrayBuffer>(buffer: T, ...rest: unknown[]) {
      const callback = rest.pop() as Callback<T>;
      const [offset, size] = rest as [number | undefined, number | undefined];
      fill(buffer, offset ?? 0, size);
      later(callback, buffer);
    },
    randomInt(min: number, max?: number | Callback<number>, callback?: Callback<number>) {
      let [low, high, done] = [0, min, undefined as Callback<number> | undefined];
      if (typeof max === "number") [low, high, done] = [min, max, callback];
      else done = max;
      const range = high - low;
      if (!Number.isSafeInteger(low) || !Number.isSafeInteger(high) || range <= 0 || range > 2 ** 48) {
        throw new RangeError(
          `The value of "max" is out of range. It must be greater than the value of "min" (${low}) and at most ${low + 2 ** 48}. Received ${high}`,
        );
      }
      // Uniform by rejection over 48 random bits, as Node draws them.
      const limit = 2 ** 48 - (2 ** 48 % range);
      const bytes = new Uint8Array(6);
      let drawn: number;
      do {
        fill(bytes);
        drawn = bytes.reduce((n, b) => n * 256 + b, 0);
      } while (drawn >= limit);
      const value = low + (drawn % range);
      if (done) return later(done, value);
      return value;
    },
    randomUUID: () => crypto.randomUUID(),
    getRandomValues: (array: Parameters<typeof crypto.getRandomValues>[0]) => crypto.getRandomValues(array),
    get webcrypto() {
      return crypto;
    },
    get subtle() {
      return crypto.subtle;
    },
  };
  return Object.defineProperties(Object.create(platform), Object.getOwnPropertyDescriptors(own));
}
