import { describe, expect, test } from "bun:test";
import { effectivePermissions, type PolicyRule } from "../../src/sources/index.ts";

const rule = (r: Partial<PolicyRule>): PolicyRule => ({ subjectKind: "role", subject: "member", path: "", effect: "allow", perms: "rwx", seeded: false, ...r });
const member = { userId: "u1", role: "member", agentId: null };

describe("the URI-policy evaluator", () => {
  test("nothing mentioned means nothing granted", () => {
    expect(effectivePermissions([], member, "")).toEqual({ read: false, write: false, exec: false });
  });

  test("a rule applies to its role, its user, or its agent only with agent context", () => {
    const rules = [rule({ perms: "r" }), rule({ subjectKind: "user", subject: "u1", perms: "w" }), rule({ subjectKind: "agent", subject: "a1", perms: "x" })];
    expect(effectivePermissions(rules, member, "")).toEqual({ read: true, write: true, exec: false });
    expect(effectivePermissions(rules, { ...member, agentId: "a1" }, "")).toEqual({ read: true, write: true, exec: true });
    expect(effectivePermissions(rules, { userId: "u2", role: "viewer", agentId: null }, "")).toEqual({ read: false, write: false, exec: false });
  });

  test("the most specific path decides each permission; at the same path a deny beats an allow", () => {
    const rules = [rule({ perms: "rwx" }), rule({ path: "out", effect: "deny", perms: "w" }), rule({ path: "out/tmp", perms: "w" }), rule({ subjectKind: "user", subject: "u1", effect: "deny", perms: "x" })];
    expect(effectivePermissions(rules, member, "")).toEqual({ read: true, write: true, exec: false });
    expect(effectivePermissions(rules, member, "out/file")).toEqual({ read: true, write: false, exec: false });
    expect(effectivePermissions(rules, member, "out/tmp/x")).toEqual({ read: true, write: true, exec: false });
    expect(effectivePermissions(rules, member, "outside")).toEqual({ read: true, write: true, exec: false });
  });

  test("explicit per-role entries always win over seeded defaults", () => {
    const seeded = [rule({ perms: "r", seeded: true })];
    expect(effectivePermissions(seeded, member, "")).toEqual({ read: true, write: false, exec: false });
    const withExplicit = [...seeded, rule({ perms: "x" })];
    expect(effectivePermissions(withExplicit, member, "")).toEqual({ read: false, write: false, exec: true });
  });
});
