/**
 * wrk (https://github.com/wg/wrk) as the load generator: one thread holding
 * `concurrency` keep-alive connections for `amount.seconds`. The request is
 * given to wrk in a Lua script; the figures are read from its `--latency`
 * report. wrk tells statuses apart only as 2xx/3xx or not, so a run fails
 * when any answer falls in the other class than `expect` (the benchmark checks
 * the exact status of each scenario once before loading it).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LoadGenerator, LoadResult, LoadSpec } from "./_load-generator.ts";

/** A Lua long string: no escaping needed unless the text holds the closing bracket. */
function luaString(text: string): string {
  if (text.includes("]==]")) throw new Error("cannot quote a request holding ]==] for wrk");
  return `[==[${text}]==]`;
}

function script(spec: LoadSpec): string {
  const lines = ['wrk.method = "POST"', `wrk.body = ${luaString(spec.body)}`];
  for (const [name, value] of Object.entries(spec.headers)) lines.push(`wrk.headers[ ${luaString(name)} ] = ${luaString(value)}`);
  return lines.join("\n") + "\n";
}

/** "615.00us", "5.38ms", "1.02s" → milliseconds. */
function milliseconds(value: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(value);
  if (!match) throw new Error(`cannot read wrk's latency "${value}"`);
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2] as "us" | "ms" | "s" | "m"];
  return Number(match[1]) * scale;
}

/** The figures of wrk's report; throws on socket errors or answers of the wrong class. */
export function readWrkReport(report: string, expect: number): LoadResult {
  const field = (pattern: RegExp) => {
    const match = pattern.exec(report);
    if (!match) throw new Error(`cannot read wrk's report:\n${report}`);
    return match[1]!;
  };
  const requests = Number(field(/(\d+) requests in/));
  const errors = /Socket errors: (.*)/.exec(report);
  if (errors) throw new Error(`wrk saw socket errors (${errors[1]})`);
  const other = Number(/Non-2xx or 3xx responses: (\d+)/.exec(report)?.[1] ?? 0);
  const wanted = expect >= 200 && expect < 400 ? 0 : requests;
  if (other !== wanted) throw new Error(`expected every answer to be ${expect}, but ${other} of ${requests} were not 2xx/3xx`);
  return {
    requests,
    rps: Number(field(/Requests\/sec:\s+([\d.]+)/)),
    p50: milliseconds(field(/\s50%\s+(\S+)/)),
    p99: milliseconds(field(/\s99%\s+(\S+)/)),
  };
}

/** wrk at `path` as a load generator. */
export function wrkLoad(path: string): LoadGenerator {
  return {
    name: "wrk, one thread",
    measures: "seconds",
    async run(spec) {
      const dir = mkdtempSync(join(tmpdir(), "hatch-wrk-"));
      try {
        const lua = join(dir, "request.lua");
        writeFileSync(lua, script(spec));
        const args = [path, "-t1", `-c${spec.concurrency}`, `-d${spec.amount.seconds}s`, "--latency", "-s", lua, spec.url];
        const child = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
        const [report, errors, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
        if (code !== 0) throw new Error(`wrk exited with ${code} for ${spec.url}: ${errors.trim()}`);
        return readWrkReport(report, spec.expect);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
