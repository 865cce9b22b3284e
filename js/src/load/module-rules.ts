/**
 * wrangler's module rules, as wrangler applies them when it bundles a Worker with esbuild: the
 * files a Worker imports that are not code become Text modules (the file's text), Data modules
 * (an ArrayBuffer of its bytes) or CompiledWasm modules (a WebAssembly.Module), by the config's
 * `rules` first and wrangler's defaults after them.
 *
 * What wrangler does (workers-sdk, `deployment-bundle/rules.ts` and `module-collection.ts`), and
 * so what this does:
 * - A rule's glob is matched against the import's specifier as the code writes it (`./README.md`,
 *   `../data/table.bin`, `some-package/page.html`), not against the resolved file's path. A glob is
 *   turned into a pattern as wrangler's `glob-to-regexp` does without options: every run of `*`
 *   matches any characters, `/` included, and every other character only itself (`?`, `[…]` and
 *   `{a,b}` too), the whole specifier anchored. So `**\/*.md` matches `./README.md` and
 *   `./docs/a.md`, but not a bare `README.md`.
 * - The rules are tried in order, each glob of a rule in its order; the first that matches decides.
 *   An import no rule matches is code, bundled as esbuild bundles it (or refused by esbuild when
 *   it has no loader for it).
 * - `fallthrough`: Cloudflare's docs say only that `fallthrough = true` on a rule "allows you to
 *   have multiple rules for the same Type". wrangler's `parseRules` makes it precise, and this
 *   follows it: the config's rules come first, then the defaults; the first rule of a type that
 *   does not set `fallthrough = true` closes that type, and every later rule of the type, a
 *   default one included, is dropped. An import that only a dropped rule matches is an error
 *   (wrangler's UserError), as it is here. So a config's `Text` rule for `**\/*.md` without
 *   `fallthrough = true` drops the default Text rule, and importing `./page.html` then fails; with
 *   it, both apply. (A `fallthrough = false` closes the type as an absent one does; wrangler only
 *   stops warning then.)
 * - `ESModule` and `CommonJS` rules only matter to wrangler with `find_additional_modules`, when
 *   the files they match are uploaded beside the bundle instead of in it. Without it wrangler
 *   leaves JavaScript to esbuild, as this does in both cases: the module runs the same code, once
 *   per isolate either way. A dropped JavaScript rule still refuses the imports it matches.
 */

import { readFileSync } from "node:fs";
import type { Plugin } from "esbuild";
import { shown } from "../errors.ts";
import type { ModuleRule, ModuleRuleType } from "./wrangler.ts";

/** A rule as it applies: a config's (`at` set) or one of wrangler's defaults. */
type AppliedRule = Omit<ModuleRule, "at"> & { readonly at?: string };

/** wrangler's default module rules (4.86), which apply after a config's own. */
const DEFAULT_RULES: readonly AppliedRule[] = [
  { type: "Text", globs: ["**/*.txt", "**/*.html", "**/*.sql"] },
  { type: "Data", globs: ["**/*.bin"] },
  { type: "CompiledWasm", globs: ["**/*.wasm", "**/*.wasm?module"] },
];

/** The rules that apply, in order, and those a rule of their type before them drops. */
export interface ArrangedRules {
  readonly applied: readonly AppliedRule[];
  readonly dropped: readonly { readonly rule: AppliedRule; readonly closedBy: AppliedRule }[];
}

/** A config's rules, then wrangler's defaults, arranged as wrangler's `parseRules` arranges them. */
export function arrangeRules(own: readonly ModuleRule[]): ArrangedRules {
  const applied: AppliedRule[] = [];
  const dropped: { rule: AppliedRule; closedBy: AppliedRule }[] = [];
  const closedBy = new Map<ModuleRuleType, AppliedRule>();
  for (const rule of [...own, ...DEFAULT_RULES]) {
    const closer = closedBy.get(rule.type);
    if (closer) {
      dropped.push({ rule, closedBy: closer });
      continue;
    }
    applied.push(rule);
    if (rule.fallthrough !== true) closedBy.set(rule.type, rule);
  }
  return { applied, dropped };
}

/** The pattern a rule's glob matches specifiers with, as wrangler's `glob-to-regexp` makes it. */
export function globPattern(glob: string): RegExp {
  let source = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === "*") {
      while (glob[i + 1] === "*") i++;
      source += ".*";
    } else {
      // Escaped for JavaScript's patterns and for Go's, which esbuild matches filters with.
      source += /[\\^$.|?+()[\]{}/]/.test(c) ? `\\${c}` : c;
    }
  }
  return new RegExp(`^${source}$`);
}

/** Marks the resolutions the plugin asks esbuild for, so that its rules do not match them again. */
const RESOLVING = Symbol("resolving a module rule's file");

/** The namespaces the plugin puts Text and Data modules in, for its own loaders. */
const TEXT = "eutaxy-text";
const DATA = "eutaxy-data";

/**
 * The esbuild plugin that applies `own` (the rules of `configFile`) and then wrangler's defaults
 * to a Worker's imports. A Text module is the file's text; a Data module is an ArrayBuffer of its
 * bytes, new in each evaluation, so what one run writes into it no other run sees; a CompiledWasm
 * module stays external, required by the file's absolute path (`compiledWasmImports`), since
 * workerd compiles no WebAssembly at run time and the runtime must hand it over compiled.
 */
export function moduleRulesPlugin(own: readonly ModuleRule[], configFile?: string): Plugin {
  const { applied, dropped } = arrangeRules(own);
  const named = (rule: AppliedRule) =>
    rule.at === undefined
      ? `wrangler's default ${rule.type} rule`
      : `${rule.at} (${rule.type})${configFile ? ` of ${shown(configFile)}` : ""}`;
  return {
    name: "eutaxy-module-rules",
    setup(b) {
      for (const rule of applied) {
        if (rule.type === "ESModule" || rule.type === "CommonJS") continue;
        const type = rule.type;
        for (const glob of rule.globs) {
          b.onResolve({ filter: globPattern(glob) }, async (args) => {
            if (args.pluginData === RESOLVING) return undefined;
            // wrangler resolves the file without the query (`./add.wasm?module` is `./add.wasm`).
            const resolved = await b.resolve(args.path.replace(/\?.*$/s, ""), {
              kind: args.kind,
              importer: args.importer,
              resolveDir: args.resolveDir,
              pluginData: RESOLVING,
            });
            if (resolved.errors.length > 0) return { errors: resolved.errors };
            if (type === "CompiledWasm") return { path: resolved.path, external: true };
            return { path: resolved.path, namespace: type === "Text" ? TEXT : DATA };
          });
        }
      }
      for (const { rule, closedBy } of dropped) {
        for (const glob of rule.globs) {
          b.onResolve({ filter: globPattern(glob) }, (args) => {
            if (args.pluginData === RESOLVING) return undefined;
            return {
              errors: [
                {
                  text: `${args.path} matches ${named(rule)}, which wrangler drops, and so refuses the import: ${named(closedBy)} comes before it without fallthrough = true`,
                },
              ],
            };
          });
        }
      }
      b.onLoad({ filter: /.*/, namespace: TEXT }, (args) => ({
        contents: readFileSync(args.path, "utf8"),
        loader: "text",
      }));
      b.onLoad({ filter: /.*/, namespace: DATA }, (args) => ({
        contents: dataModule(readFileSync(args.path)),
        loader: "js",
      }));
    },
  };
}

/** A Data module's code: `bytes` decoded into a new ArrayBuffer each time it is evaluated. */
function dataModule(bytes: Buffer): string {
  return [
    `const text = atob(${JSON.stringify(bytes.toString("base64"))});`,
    "const bytes = new Uint8Array(text.length);",
    "for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);",
    "export default bytes.buffer;",
  ].join("\n");
}
