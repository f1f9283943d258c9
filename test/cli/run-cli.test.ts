import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { existsSync, readdirSync } from "node:fs";
import { adminCommands, auditCommands, runCli, sourceCommands } from "../../src/cli/index.ts";
import { DATABASE_FILE } from "../../src/db/index.ts";
import { hatchCli, tempDataDir } from "../helpers/cli.ts";

describe("the CLI's argument parsing", () => {
  test("a flag given twice is a usage error (exit 2), not silently the last value: member remove --project a --project b changes nothing", async () => {
    using dir = tempDataDir();
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1"]);
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "m@example.com", "--password", "member pass 1"]);
    for (const slug of ["staging", "prod"]) {
      await hatchCli(dir.path, ["admin", "project", "add", "--slug", slug, "--name", slug, "--owner", "o@example.com"]);
      await hatchCli(dir.path, ["admin", "member", "add", "--project", slug, "--email", "m@example.com", "--role", "member"]);
    }
    // An edited history line: the operator meant staging, and the earlier --project prod was left in.
    const removed = await hatchCli(dir.path, ["admin", "member", "remove", "--project", "prod", "--email", "m@example.com", "--project", "staging"]);
    using db = new Database(join(dir.path, DATABASE_FILE), { readonly: true });
    const memberships = db.query("SELECT p.slug FROM members m JOIN projects p ON p.id = m.project_id JOIN users u ON u.id = m.user_id WHERE u.email = 'm@example.com' ORDER BY p.slug").all();
    expect({ code: removed.code, memberships }).toEqual({ code: 2, memberships: [{ slug: "prod" }, { slug: "staging" }] });
  });
});

describe("the CLI's usage errors", () => {
  test("the rest of an unquoted value (a password's second word) is refused with exit 2 without being printed", async () => {
    using dir = tempDataDir();
    const result = await hatchCli(dir.path, ["admin", "user", "add", "--email", "a@example.com", "--password", "correct", "horse-battery-staple"]);
    expect({ code: result.code, echoed: result.err.includes("horse-battery-staple") }).toEqual({ code: 2, echoed: false });
    expect(result.err).toStartWith("hatch: unexpected argument at position 1 (quote a value that holds spaces)");
  });

  test("nor is a rest that starts with a dash (an unquoted password \"Tr0ub4dor --and-3-more-words\"), which parseArgs takes for an unknown option", async () => {
    using dir = tempDataDir();
    const result = await hatchCli(dir.path, ["admin", "user", "add", "--email", "a@example.com", "--password", "Tr0ub4dor", "--and-3-more-words"]);
    expect({ code: result.code, echoed: result.err.includes("more-words") }).toEqual({ code: 2, echoed: false });
    expect(result.err).toStartWith("hatch: unknown option at position 5 (quote a value that holds spaces)\n\nusage: hatch admin user add");
  });
});

describe("the CLI's help", () => {
  test("an option one of a group must be given names the others instead of saying (optional), and giving none or two is refused", async () => {
    using dir = tempDataDir();
    const help = await hatchCli(dir.path, ["admin", "source", "rule", "--help"], sourceCommands);
    expect(help.out).toContain("--role VALUE (or --user, --agent)  role name");
    expect(help.out).toContain("--deny VALUE (or --allow)");
    expect(help.out).toContain("--path VALUE (optional)");
    for (const subjects of [[], ["--role", "member", "--user", "m@example.com"]]) {
      const refused = await hatchCli(dir.path, ["admin", "source", "rule", "--project", "p", "--source", "s", ...subjects, "--allow", "r"], sourceCommands);
      expect({ code: refused.code, err: refused.err }).toEqual({ code: 2, err: expect.stringContaining("give exactly one of --role, --user, --agent") });
    }
  });
});

describe("--json error output", () => {
  test("refused arguments (exit 2) are one {error:{code,message}} line under --json too, so a script reading stderr as JSON can tell a bad value from a crash", async () => {
    using dir = tempDataDir();
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1"]);
    const refusals = [
      { argv: ["admin", "audit", "--limit", "0", "--json"], message: expect.stringContaining("--limit") },
      { argv: ["admin", "audit", "--since", "yesterday", "--json"], message: expect.stringContaining("--since") },
      { argv: ["admin", "setting", "set", "terminalMaxSessions", "many", "--json"], message: expect.stringContaining("many") },
      { argv: ["admin", "member", "add", "--project", "p", "--json"], message: "--email is required" },
      { argv: ["admin", "member", "add", "--json", "--project", "p", "--nosuch", "x"], message: "unknown option at position 4 (quote a value that holds spaces)" },
      { argv: ["admin", "user", "add", "--email", "o@example.com", "--password", "two", "words", "--json"], message: "unexpected argument at position 1 (quote a value that holds spaces)" },
      { argv: ["admin", "nosuch", "--json"], message: "unknown command (hatch --help lists them)" },
    ];
    for (const { argv, message } of refusals) {
      const result = await hatchCli(dir.path, argv, [...adminCommands, ...auditCommands]);
      expect({ argv, code: result.code, out: result.out, err: JSON.parse(result.err) }).toEqual({ argv, code: 2, out: "", err: { error: { code: "invalid_arguments", message } } });
    }
    // Without --json, and with --json only after `--` (a value, not the flag), it is the usage text it always was.
    const plain = await hatchCli(dir.path, ["admin", "member", "add", "--project", "p"], adminCommands);
    expect({ code: plain.code, err: plain.err }).toEqual({ code: 2, err: expect.stringMatching(/^hatch: --email is required\n\nusage: hatch admin member add/) });
    const valued = await hatchCli(dir.path, ["admin", "setting", "set", "terminalMaxSessions", "--", "--json"], adminCommands);
    expect({ code: valued.code, err: valued.err }).toEqual({ code: 2, err: expect.stringMatching(/^hatch: VALUE must be a whole number, not "--json"\n\nusage: hatch admin setting set/) });
  });

  test("a command that fails on a bad HATCH_* setting answers exit 1 with {error:{code,message}} under --json, as the README says of every exit-1 failure", async () => {
    using dir = tempDataDir();
    let out = "";
    let err = "";
    const code = await runCli(["admin", "setting", "get", "--json"], adminCommands, {
      env: { HATCH_DATA_DIR: dir.path, HATCH_PORT: "not-a-port" },
      io: { out: (t) => (out += t + "\n"), err: (t) => (err += t + "\n") },
    });
    expect({ code, out }).toEqual({ code: 1, out: "" });
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(err);
    } catch {
      parsed = `not JSON: ${err.trim()}`;
    }
    expect(parsed).toEqual({ error: { code: expect.any(String), message: expect.stringContaining("HATCH_PORT") } });
  });
});

describe("a data dir that is not there", () => {
  test("a read such as admin audit --server is refused (exit 1) rather than answered from a new, empty database made on the spot", async () => {
    using parent = tempDataDir();
    // A HATCH_DATA_DIR typo, or `./data` read from another working directory than the server's.
    const missing = join(parent.path, "dtaa");
    const read = await hatchCli(missing, ["admin", "audit", "--server"], auditCommands);
    expect({ code: read.code, out: read.out, created: existsSync(missing) }).toEqual({ code: 1, out: "", created: false });
    expect(read.err).toBe(`hatch: There is no hatch database in ${missing}: is HATCH_DATA_DIR the server's data dir?\n`);
  });
});
