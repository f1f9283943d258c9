import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");

/** Every .ts file under src/. */
function sourceFiles(dir = join(ROOT, "src")): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith(".ts") ? [path] : [];
  });
}

test("the README names every audit action the code writes, so an operator can filter on it", () => {
  const written = new Set<string>();
  for (const file of sourceFiles()) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/\baction:\s*"([a-z_]+\.[a-z_.]+)"/g)) written.add(match[1]!);
    for (const match of text.matchAll(/\brecordedBy\(\s*[^,]+,\s*"([a-z_]+\.[a-z_.]+)"/g)) written.add(match[1]!);
  }
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const listed = /The actions, for `\?action=` and `hatch admin audit --action`: ([^\n]*?)\.(?: |$)/m.exec(readme)?.[1] ?? "";
  const named = new Set([...listed.matchAll(/`([a-z_]+\.[a-z_.]+)`/g)].map((m) => m[1]!));
  expect(written.size).toBeGreaterThan(30);
  expect([...written].filter((action) => !named.has(action)).sort()).toEqual([]);
  expect([...named].filter((action) => !written.has(action)).sort()).toEqual([]);
});
