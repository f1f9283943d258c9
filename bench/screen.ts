/**
 * The input screen's cost per line: `Blocklist.checkLine` runs on the event
 * loop every session, request and run shares, so what one line costs is what
 * every other user waits. Prints the median and p95 of checking ordinary and
 * adversarial lines, beside the baseline of an ordinary command and of
 * splitting the same line on its separators (the least any screen must do).
 * Lines whose work passes the screen's bound are refused ("line too complex to
 * screen"); the figure says how soon.
 *
 * Run: ./node_modules/.bin/bun bench/screen.ts [runs]
 */
import { Blocklist } from "../src/pty/blocklist.ts";

/** Enough runs for a stable median; the worst lines take tens of milliseconds each. */
const DEFAULT_RUNS = 15;
const WARMUP_RUNS = 3;

const runs = Number(process.argv[2] ?? DEFAULT_RUNS);
const blocklist = new Blocklist({ protectedPaths: ["/srv/hatch/data"], home: "/root", cwd: () => "/srv/projects/web" });
const files = Array.from({ length: 2000 }, (_, i) => `src/components/widget-${i}.tsx`).join(" ");

const lines: Record<string, string> = {
  "ordinary command (baseline)": "git status --short && ls -la src",
  "long pipeline, 40 stages": Array.from({ length: 40 }, (_, i) => `grep -v pattern${i}`).join(" | "),
  "2,000 files named from the project dir": `git add ${files}`,
  "for loop over 500 words": `for f in ${Array.from({ length: 500 }, (_, i) => `file${i}.txt`).join(" ")}; do wc -l "$f"; done`,
  "16 KiB of `cd a;` (exec's longest)": "cd a;".repeat(3276),
  "64 KiB of `cd a;` (one input message)": "cd a;".repeat(13_107),
  "64 KiB of `a;`": "a;".repeat(32_768),
  "256 KiB of `a;` (the longest line)": "a;".repeat(131_072),
  "`bash -c` holding 15 KB of `cd a;`": `bash -c '${"cd a;".repeat(3000)}'`,
  "16 KiB: a deep `cd`, then one word `a,a,…`": `cd ${"d/".repeat(2000)}; x ${"a,".repeat(6000)}`.slice(0, 16 * 1024),
};

function measure(check: () => unknown): { median: number; p95: number } {
  for (let i = 0; i < WARMUP_RUNS; i++) check();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    check();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, p95: times[Math.min(times.length - 1, Math.ceil(times.length * 0.95) - 1)]! };
}

const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 0)} ms`;
console.log(`checkLine per line, ${runs} runs each (median / p95); "split" is line.split on ; & | alone`);
for (const [name, line] of Object.entries(lines)) {
  const checked = measure(() => blocklist.checkLine(line));
  const split = measure(() => line.split(/[;&|]/));
  const verdict = blocklist.checkLine(line);
  const said = verdict.blocked ? `refused: ${verdict.reason}` : "allowed";
  console.log(`${name.padEnd(42)} ${`${line.length}`.padStart(7)} chars  check ${ms(checked.median).padStart(9)} / ${ms(checked.p95).padStart(9)}  split ${ms(split.median).padStart(8)}  ${said}`);
}
