/**
 * `npm run bench`: runs every benchmark in this folder in turn. Each prints its
 * figures beside a baseline measured in the same run; nothing here asserts a time.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";

const only = process.argv.slice(2);
const benches = readdirSync(import.meta.dir)
  .filter((f) => f.endsWith(".ts") && f !== "index.ts" && !f.startsWith("_"))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();

if (benches.length === 0) console.log("bench: no benchmarks yet");
for (const file of benches) {
  console.log(`\n=== bench/${file} ===`);
  const child = Bun.spawn([process.execPath, join(import.meta.dir, file)], { stdout: "inherit", stderr: "inherit" });
  const code = await child.exited;
  if (code !== 0) {
    console.error(`bench/${file} exited with ${code}`);
    process.exitCode = 1;
  }
}
