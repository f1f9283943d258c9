/**
 * A closed-loop HTTP load generator, run as its own process by the benchmarks
 * (as wrk or oha would be) so that the server's thread is not also the
 * client's: `concurrency` requests stay in flight, each sent again as soon as
 * its answer is read. Prints one JSON line: `{ rps, p50, p99 }` (ms).
 *
 * Usage: bun bench/_load-generator.ts '<json LoadSpec>'
 */

/** One scenario of load: the request, the status every answer must have, how much and how wide. */
export interface LoadSpec {
  url: string;
  headers: Record<string, string>;
  body: string;
  expect: number;
  warmup: number;
  requests: number;
  concurrency: number;
}

/** What a run of load measured. */
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
}

async function load(spec: LoadSpec, count: number): Promise<LoadResult> {
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
  return { rps: count / seconds, p50: at(0.5), p99: at(0.99) };
}

/** Run `spec` in a child process and read back its figures. */
export async function generateLoad(spec: LoadSpec): Promise<LoadResult> {
  const child = Bun.spawn([process.execPath, import.meta.path, JSON.stringify(spec)], { stdout: "pipe", stderr: "inherit" });
  const output = await new Response(child.stdout).text();
  const code = await child.exited;
  if (code !== 0) throw new Error(`the load generator exited with ${code} for ${spec.url}`);
  return JSON.parse(output.trim()) as LoadResult;
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2]!) as LoadSpec;
  await load(spec, spec.warmup);
  console.log(JSON.stringify(await load(spec, spec.requests)));
}
