/**
 * A closed-loop HTTP load generator on Bun's `fetch`, run as its own process:
 * `concurrency` requests stay in flight, each sent again as soon as its answer
 * is read. The fallback when wrk is not installed (bench/_load-generator.ts).
 * Prints one JSON line: `{ requests, rps, p50, p99 }` (ms).
 *
 * Usage: bun bench/_fetch-load.ts '<json LoadSpec>'
 */
import type { LoadGenerator, LoadResult, LoadSpec } from "./_load-generator.ts";

async function load(spec: LoadSpec): Promise<LoadResult> {
  const count = spec.amount.requests;
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next++ < count) {
      const t0 = performance.now();
      const response = await fetch(spec.url, { method: "POST", headers: spec.headers, body: spec.body });
      await response.arrayBuffer();
      latencies.push(performance.now() - t0);
      if (response.status !== spec.expect) throw new Error(`expected ${spec.expect}, got ${response.status}`);
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { requests: count, rps: count / seconds, p50: at(0.5), p99: at(0.99) };
}

/** The Bun fetch client as a load generator: each run is a fresh child process. */
export function fetchLoad(): LoadGenerator {
  return {
    name: "Bun fetch client (install wrk for figures not bounded by the client)",
    measures: "requests",
    async run(spec) {
      const child = Bun.spawn([process.execPath, import.meta.path, JSON.stringify(spec)], { stdout: "pipe", stderr: "inherit" });
      const output = await new Response(child.stdout).text();
      const code = await child.exited;
      if (code !== 0) throw new Error(`the load generator exited with ${code} for ${spec.url}`);
      return JSON.parse(output.trim()) as LoadResult;
    },
  };
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2]!) as LoadSpec;
  console.log(JSON.stringify(await load(spec)));
}
