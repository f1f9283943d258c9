import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../src");

/**
 * Layers from DESIGN.md, bottom first. A folder may import only from its own
 * layer's folder and the layers below it, and only through their index.ts.
 */
const LAYERS: Record<string, number> = {
  "config.ts": 0,
  db: 0,
  platform: 1,
  sources: 2,
  confine: 2,
  screen: 2,
  // A PTY session owns its screen mirror, so pty sits just above screen.
  pty: 3,
  terminal: 4,
  broker: 4,
  workflows: 4,
  widget: 4,
  fire: 5,
  channels: 5,
  "app.ts": 6,
  "main.ts": 7,
  cli: 8,
  "cli.ts": 9,
};

/** Runtime-specific modules and the only folders allowed to touch them. */
const EDGE_IMPORTS: Record<string, string[]> = {
  elysia: ["routes.ts", "app.ts"],
  "bun:sqlite": ["db/"],
  "bun:ffi": ["confine/", "pty/tty-flow.ts", "db/directory-lock.ts"],
  "bun-pty": ["pty/"],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") && !path.endsWith(".d.ts") ? [path] : [];
  });
}

function partOf(file: string): string {
  return relative(SRC, file).split("/")[0]!;
}

const transpiler = new Bun.Transpiler({ loader: "ts" });
const imports = new Map(
  sourceFiles(SRC).map((file) => [file, transpiler.scanImports(readFileSync(file, "utf8").replace(/^#!.*\n/, "")).map((i) => i.path)] as const),
);

describe("architecture", () => {
  test("every part is a known layer", () => {
    const unknown = [...imports.keys()].map(partOf).filter((part) => !(part in LAYERS));
    expect([...new Set(unknown)]).toEqual([]);
  });

  test("dependencies point down and cross folders only through index.ts", () => {
    const violations: string[] = [];
    for (const [file, paths] of imports) {
      const from = partOf(file);
      for (const path of paths.filter((p) => p.startsWith("."))) {
        const target = resolve(dirname(file), path);
        const to = partOf(target);
        if (to === from) continue;
        if (LAYERS[to]! > LAYERS[from]! || (LAYERS[to] === LAYERS[from] && to !== from)) {
          violations.push(`${relative(SRC, file)} imports ${path} (upward or sideways)`);
        }
        const isFolder = !to.endsWith(".ts");
        if (isFolder && relative(join(SRC, to), target) !== "index.ts") {
          violations.push(`${relative(SRC, file)} imports ${path} past ${to}/index.ts`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  test("runtime-specific modules are imported only by their edge modules", () => {
    const violations: string[] = [];
    for (const [file, paths] of imports) {
      const rel = relative(SRC, file);
      for (const path of paths) {
        const allowed = EDGE_IMPORTS[path];
        if (allowed && !allowed.some((a) => (a.endsWith("/") ? rel.startsWith(a) : rel.endsWith(a)))) {
          violations.push(`${rel} imports ${path}`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  test("there are no import cycles", () => {
    const graph = new Map(
      [...imports].map(([file, paths]) => [
        file,
        paths.filter((p) => p.startsWith(".")).map((p) => resolve(dirname(file), p)),
      ]),
    );
    const cycles: string[] = [];
    const state = new Map<string, "visiting" | "done">();
    const visit = (file: string, trail: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "visiting") {
        cycles.push([...trail.slice(trail.indexOf(file)), file].map((f) => relative(SRC, f)).join(" -> "));
        return;
      }
      state.set(file, "visiting");
      for (const next of graph.get(file) ?? []) visit(next, [...trail, file]);
      state.set(file, "done");
    };
    for (const file of graph.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
