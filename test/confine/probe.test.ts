/**
 * The host probe: platform, Landlock ABI and a bwrap that actually works.
 */
import { describe, expect, test } from "bun:test";
import { cachedProbe, probeConfinement } from "../../src/confine/index.ts";

describe("probeConfinement", () => {
  test("off Linux nothing is probed", async () => {
    const probe = await probeConfinement({ platform: "win32", landlockAbi: () => 7, tryBwrap: async () => true });
    expect(probe).toEqual({ platform: "win32", landlockAbi: null, bwrapPath: null });
  });

  test("bwrap counts only when installed and its trial run (the real isolation flags) succeeds", async () => {
    const seen: string[][] = [];
    const working = await probeConfinement({ landlockAbi: () => 6, bwrapCandidates: ["/bin/sh"], tryBwrap: async (_p, args) => (seen.push(args), true) });
    expect(working).toEqual({ platform: process.platform, landlockAbi: 6, bwrapPath: "/bin/sh" });
    expect(seen[0]).toEqual(expect.arrayContaining(["--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--ro-bind", "/"]));
    expect(await probeConfinement({ landlockAbi: () => 6, bwrapCandidates: ["/bin/sh"], tryBwrap: async () => false })).toMatchObject({ bwrapPath: null });
    expect(await probeConfinement({ landlockAbi: () => 6, bwrapCandidates: ["/nonexistent/bwrap"] })).toMatchObject({ bwrapPath: null });
  });

  test("this host: Landlock ABI 3 or newer and a working bwrap (CI installs bubblewrap)", async () => {
    const probe = await probeConfinement();
    expect(probe.landlockAbi).toBeGreaterThanOrEqual(3);
    if (probe.bwrapPath === null) throw new Error("bubblewrap is missing or not working: install it with `apt-get install -y bubblewrap`");
  });

  test("cachedProbe probes once", async () => {
    let calls = 0;
    const probe = cachedProbe({ landlockAbi: () => (calls++, 7), bwrapCandidates: [] });
    await probe();
    await probe();
    expect(calls).toBe(1);
  });
});
