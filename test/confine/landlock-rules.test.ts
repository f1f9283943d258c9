/**
 * The rule compiler on an in-memory tree: how deny paths and narrower
 * sub-rules are carved out of additive Landlock grants.
 */
import { describe, expect, test } from "bun:test";
import { compileRules, DEVICE_RIGHTS, FS, LIST_RIGHTS, READ_RIGHTS, type TreeReader, WRITE_RIGHTS } from "../../src/confine/index.ts";

/** A fake tree: directories end with "/", symlinks start with "@". */
function tree(entries: string[]): TreeReader {
  const kinds = new Map<string, "dir" | "file" | "symlink">([["/", "dir"]]);
  for (const raw of entries) {
    const link = raw.startsWith("@");
    const path = (link ? raw.slice(1) : raw).replace(/\/$/, "");
    kinds.set(path, link ? "symlink" : raw.endsWith("/") ? "dir" : "file");
  }
  return {
    list: (dir) => [...kinds.keys()].filter((p) => p !== dir && p.slice(0, p.lastIndexOf("/") || 1) === dir).map((p) => p.slice(p.lastIndexOf("/") + 1)),
    kind: (path) => kinds.get(path) ?? "missing",
  };
}

const fs = tree(["/etc/", "/etc/hosts", "/srv/", "/srv/hatch/", "/srv/hatch/data/", "/srv/hatch/data/key", "/srv/hatch/app.js", "/srv/other/", "@/srv/link", "/usr/"]);
const byPath = (rules: { path: string; access: number }[]) => Object.fromEntries(rules.map((r) => [r.path, r.access]));

describe("compileRules", () => {
  test("without deny paths a grant is one rule", () => {
    expect(compileRules([{ path: "/", access: READ_RIGHTS }], [], fs)).toEqual([{ path: "/", access: READ_RIGHTS }]);
  });

  test("a deny path turns its ancestors into list-only rules and grants every other entry on the way; symlinks are skipped", () => {
    expect(byPath(compileRules([{ path: "/", access: READ_RIGHTS }], ["/srv/hatch/data"], fs))).toEqual({
      "/": LIST_RIGHTS,
      "/etc": READ_RIGHTS,
      "/usr": READ_RIGHTS,
      "/srv": LIST_RIGHTS,
      "/srv/other": READ_RIGHTS,
      "/srv/hatch": LIST_RIGHTS,
      "/srv/hatch/app.js": READ_RIGHTS,
    });
  });

  test("a read-only sub-rule carves its writable parent; a grant equal to a deny path is dropped, one below it is kept", () => {
    const rules = compileRules(
      [
        { path: "/srv", access: WRITE_RIGHTS },
        { path: "/srv/hatch", access: READ_RIGHTS },
        { path: "/srv/hatch/data", access: WRITE_RIGHTS },
        { path: "/srv/hatch/data/key", access: WRITE_RIGHTS },
      ],
      ["/srv/hatch/data"],
      fs,
    );
    expect(byPath(rules)).toEqual({
      "/srv": LIST_RIGHTS,
      "/srv/other": WRITE_RIGHTS,
      "/srv/hatch": LIST_RIGHTS,
      "/srv/hatch/app.js": READ_RIGHTS,
      "/srv/hatch/data/key": WRITE_RIGHTS,
    });
  });

  test("a grant below a deny path gets its own rule, carved in turn around a deny below it; the denied paths and their other entries get none", () => {
    const src = tree(["/srv/", "/srv/src/", "/srv/src/a.txt", "/srv/src/secret/", "/srv/src/secret/other.txt", "/srv/src/secret/pub/", "/srv/src/secret/pub/p.txt", "/srv/src/secret/pub/x/", "/srv/src/secret/pub/x/y/", "/srv/src/secret/pub/x/z.txt"]);
    const grants = [
      { path: "/", access: READ_RIGHTS },
      { path: "/srv/src", access: WRITE_RIGHTS },
      { path: "/srv/src/secret/pub", access: WRITE_RIGHTS },
      { path: "/srv/src/secret/pub/x/y", access: READ_RIGHTS },
    ];
    expect(byPath(compileRules(grants, ["/srv/src/secret", "/srv/src/secret/pub/x"], src))).toEqual({
      "/": LIST_RIGHTS,
      "/srv": LIST_RIGHTS,
      "/srv/src": LIST_RIGHTS,
      "/srv/src/a.txt": WRITE_RIGHTS,
      "/srv/src/secret/pub": LIST_RIGHTS,
      "/srv/src/secret/pub/p.txt": WRITE_RIGHTS,
      "/srv/src/secret/pub/x/y": READ_RIGHTS,
    });
  });

  test("a carved dir keeps the rights its narrower sub-dir grants share, so it stays usable; a narrowed file or a deny path keeps it list-only", () => {
    const noExec = WRITE_RIGHTS & ~FS.EXECUTE;
    const uploads = [
      { path: "/srv", access: WRITE_RIGHTS },
      { path: "/srv/hatch", access: noExec },
    ];
    // New files in /srv itself can be made (and are not executable); /srv/hatch runs nothing, its siblings do.
    expect(byPath(compileRules(uploads, [], fs))).toEqual({ "/srv": noExec, "/srv/other": WRITE_RIGHTS, "/srv/hatch": noExec });
    expect(byPath(compileRules([uploads[0]!, { path: "/srv/hatch", access: READ_RIGHTS }], [], fs))).toMatchObject({ "/srv": READ_RIGHTS });
    // Create and remove rights on /srv/hatch would let app.js be replaced by a file carrying them.
    expect(byPath(compileRules([uploads[0]!, { path: "/srv/hatch/app.js", access: READ_RIGHTS }], [], fs))).toMatchObject({ "/srv": LIST_RIGHTS, "/srv/hatch": LIST_RIGHTS });
    expect(byPath(compileRules(uploads, ["/srv/other"], fs))).toMatchObject({ "/srv": LIST_RIGHTS });
  });

  test("a nested grant with more rights does not carve; a device grant under a list-only dir does not carve it either", () => {
    expect(compileRules([{ path: "/", access: READ_RIGHTS }, { path: "/srv", access: WRITE_RIGHTS }], [], fs)).toHaveLength(2);
    const dev = tree(["/dev/", "/dev/null", "/dev/pts/"]);
    expect(compileRules([{ path: "/dev", access: LIST_RIGHTS }, { path: "/dev/null", access: DEVICE_RIGHTS }], [], dev)).toEqual([
      { path: "/dev", access: FS.READ_DIR },
      { path: "/dev/null", access: DEVICE_RIGHTS },
    ]);
  });
});
