import { describe, expect, test } from "bun:test";
import { SECCOMP_ARCHES, seccompFilter } from "../../src/confine/index.ts";

describe("the helper's seccomp filter", () => {
  test("is built for each ABI hatch runs on, and for no other: its system-call numbers are not guessed", () => {
    for (const arch of Object.keys(SECCOMP_ARCHES)) {
      const filter = seccompFilter(arch);
      // struct sock_filter records; the first loads the ABI, which the second compares with this one's.
      expect(filter.length % 8).toBe(0);
      expect([filter.readUInt16LE(0), filter.readUInt32LE(4)]).toEqual([0x20, 4]);
      expect(filter.readUInt32LE(12)).toBe(SECCOMP_ARCHES[arch as keyof typeof SECCOMP_ARCHES].audit);
    }
    expect(() => seccompFilter("ia32")).toThrow('no seccomp table for architecture "ia32"');
  });
});
