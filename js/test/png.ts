/**
 * A small PNG reader for the screenshot test: enough of the format (8-bit RGB or RGBA,
 * non-interlaced, as Chromium writes its screenshots) to look at the pixels without a dependency.
 */

import { inflateSync } from "node:zlib";

export interface Image {
  readonly width: number;
  readonly height: number;
  /** Bytes per pixel: 3 (RGB) or 4 (RGBA). */
  readonly channels: number;
  /** Row-major pixels, `channels` bytes each, filters undone. */
  readonly pixels: Uint8Array;
}

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export function readPng(file: Uint8Array): Image {
  if (!SIGNATURE.every((b, i) => file[i] === b)) throw new Error("not a PNG file");
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Uint8Array[] = [];
  for (let at = 8; at + 8 <= file.length; ) {
    const length = view.getUint32(at);
    const type = String.fromCharCode(...file.subarray(at + 4, at + 8));
    const body = file.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      const header = new DataView(body.buffer, body.byteOffset, body.byteLength);
      width = header.getUint32(0);
      height = header.getUint32(4);
      const [depth, color, , , interlace] = [body[8], body[9], body[10], body[11], body[12]];
      if (depth !== 8 || interlace !== 0 || (color !== 2 && color !== 6)) {
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${color}, interlace ${interlace}`);
      }
      channels = color === 6 ? 4 : 3;
    } else if (type === "IDAT") {
      data.push(body);
    } else if (type === "IEND") {
      break;
    }
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  if (raw.length !== height * (stride + 1)) throw new Error("PNG data has the wrong length");
  const pixels = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? (pixels[out + x - channels] as number) : 0;
      const b = y > 0 ? (pixels[out - stride + x] as number) : 0;
      const c = x >= channels && y > 0 ? (pixels[out - stride + x - channels] as number) : 0;
      const v = line[x] as number;
      let predicted = 0;
      if (filter === 1) predicted = a;
      else if (filter === 2) predicted = b;
      else if (filter === 3) predicted = (a + b) >> 1;
      else if (filter === 4) predicted = paeth(a, b, c);
      else if (filter !== 0) throw new Error(`unknown PNG filter ${filter}`);
      pixels[out + x] = (v + predicted) & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** How many pixels are within `tolerance` of the colour `rgb` in every channel. */
export function countColour(image: Image, rgb: readonly [number, number, number], tolerance = 16): number {
  let n = 0;
  for (let i = 0; i < image.pixels.length; i += image.channels) {
    if (
      Math.abs((image.pixels[i] as number) - rgb[0]) <= tolerance &&
      Math.abs((image.pixels[i + 1] as number) - rgb[1]) <= tolerance &&
      Math.abs((image.pixels[i + 2] as number) - rgb[2]) <= tolerance
    ) {
      n++;
    }
  }
  return n;
}
