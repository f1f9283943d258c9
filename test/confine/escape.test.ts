/**
 * Escape attempts from a confined bash, in both modes. Every probe is
 * harmless (touch/echo into uniquely named paths); the oracle is the host
 * filesystem: the file must not appear.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, closeSync, copyFileSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { defaultLandlockHelper } from "../../src/confine/index.ts";
import { isAlive } from "../helpers/workflows.ts";
import { FAKE_TOKEN_VALUE, MODES, probeName, runCommand, Sandbox } from "./sandbox-fixture.ts";

/** Printed by the last line of a probe script: proves the confined bash ran it to the end. */
const END = "END";

process.env.FAKE_TOKEN = FAKE_TOKEN_VALUE;

describe.each(MODES)("confined bash (%s)", (mode) => {
  test("writes inside the writable root and the scratch dir succeed; scratch is 0700 and TMPDIR points at it", async () => {
    await using sb = await Sandbox.create(mode);
    const r = await sb.run('echo a > in-root.txt && echo b > "$TMPDIR/in-scratch.txt" && echo "$TMPDIR" && stat -c %a "$TMPDIR" && pwd');
    expect(r).toEqual({ code: 0, stdout: `${sb.scratch}\n700\n${sb.root}\n`, stderr: "" });
    expect(readFileSync(join(sb.root, "in-root.txt"), "utf8")).toBe("a\n");
    expect(readFileSync(join(sb.scratch, "in-scratch.txt"), "utf8")).toBe("b\n");
  });

  test("a write outside the roots, into a read-only root, /etc or /usr fails and no host file appears", async () => {
    await using sb = await Sandbox.create(mode);
    const targets = [join(sb.hidden, probeName("hidden")), join(sb.visible, probeName("ro")), `/etc/${probeName("etc")}`, `/usr/${probeName("usr")}`];
    const r = await sb.run(`${targets.map((t) => `echo x > '${t}' 2>/dev/null && echo "WROTE ${t}";`).join("\n")}\necho ${END}`);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${END}\n`);
    for (const t of targets) expect(sb.hostHas(t)).toBe(false);
  });

  test("the shared /tmp is not writable and nothing appears on the host /tmp", async () => {
    await using sb = await Sandbox.create(mode);
    const target = `/tmp/${probeName("tmp")}`;
    const r = await sb.run(`echo x > '${target}' && echo WROTE; mkdir '${target}.d' && echo MADE; ls -A /tmp; echo ${END}`);
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n").filter(Boolean);
    expect(lines.at(-1)).toBe(END);
    expect(r.stdout).not.toContain("WROTE");
    expect(r.stdout).not.toContain("MADE");
    expect(sb.hostHas(target)).toBe(false);
    expect(sb.hostHas(`${target}.d`)).toBe(false);
    // bwrap shows an empty private /tmp, except the mount points of what it binds there:
    // the sandbox's roots and, when the checkout itself lives under /tmp, Bun and the helper.
    if (mode === "landlock+bwrap") {
      const bound = [sb.root, process.execPath, defaultLandlockHelper().script].filter((p) => p.startsWith("/tmp/")).map((p) => p.split("/")[2]);
      const listed = lines.slice(0, -1);
      expect(listed.filter((name) => !bound.includes(name))).toEqual([]);
    }
  });

  test("a symlink in the writable root pointing outside does not carry a write out", async () => {
    await using sb = await Sandbox.create(mode);
    const planted = join(sb.visible, probeName("planted"));
    symlinkSync(planted, join(sb.root, "planted-link")); // planted from the host, before the session
    const made = join(sb.hidden, probeName("made"));
    const r = await sb.run(`echo x > planted-link 2>/dev/null && echo WROTE1; ln -s '${made}' made-link && echo x > made-link 2>/dev/null && echo WROTE2; ln -s /etc etc-link && echo x > etc-link/${probeName("etc")} 2>/dev/null && echo WROTE3; echo ${END}`);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${END}\n`);
    expect(sb.hostHas(planted)).toBe(false);
    expect(sb.hostHas(made)).toBe(false);
  });

  test("/proc/self/root and /proc/1/root lead nowhere writable", async () => {
    await using sb = await Sandbox.create(mode);
    const a = join(sb.visible, probeName("self-root"));
    const b = join(sb.hidden, probeName("pid1-root"));
    const c = `/etc/${probeName("pid1-etc")}`;
    const r = await sb.run(`echo x > '/proc/self/root${a}' 2>/dev/null && echo W1; echo x > '/proc/1/root${b}' 2>/dev/null && echo W2; echo x > '/proc/1/root${c}' 2>/dev/null && echo W3; echo ${END}`);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${END}\n`);
    for (const path of [a, b, c]) expect(sb.hostHas(path)).toBe(false);
  });

  test("hard links and renames across the root boundary fail", async () => {
    await using sb = await Sandbox.create(mode);
    writeFileSync(join(sb.visible, "victim.txt"), "victim");
    writeFileSync(join(sb.root, "mine.txt"), "mine");
    const movedOut = join(sb.visible, probeName("moved"));
    const linkedOut = join(sb.visible, probeName("linked"));
    const r = await sb.run(
      `ln '${sb.visible}/victim.txt' hard-in 2>/dev/null && echo LINKED_IN; mv mine.txt '${movedOut}' 2>/dev/null && echo MOVED; ln mine.txt '${linkedOut}' 2>/dev/null && echo LINKED_OUT; mv '${sb.visible}/victim.txt' stolen 2>/dev/null && echo STOLEN; echo ${END}`,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${END}\n`);
    expect(sb.hostHas(movedOut)).toBe(false);
    expect(sb.hostHas(linkedOut)).toBe(false);
    expect(readFileSync(join(sb.visible, "victim.txt"), "utf8")).toBe("victim");
    expect(readFileSync(join(sb.root, "mine.txt"), "utf8")).toBe("mine");
  });

  test("the environment is exactly the spec's: the test process's FAKE_TOKEN is in neither env nor /proc/1/environ", async () => {
    await using sb = await Sandbox.create(mode);
    const env = await sb.run("", { argv: ["/usr/bin/env"] });
    const names = env.stdout.trim().split("\n").map((line) => line.split("=")[0]).sort();
    expect(names).toEqual(Object.keys(sb.spec().env).sort());
    const r = await sb.run('env; cat /proc/1/environ 2>/dev/null | tr "\\0" "\\n"; echo "pid1 exit ${PIPESTATUS[0]}"');
    expect(r.stdout).toContain("HATCH_VISIBLE=yes");
    expect(r.stdout).not.toContain(FAKE_TOKEN_VALUE);
    expect(r.stdout).not.toContain("FAKE_TOKEN");
    expect(r.stdout).toContain("pid1 exit 1"); // Landlock: /proc/1 lies outside the domain
  });

  test("code planted through BUN_OPTIONS or a bunfig.toml in the cwd never runs before Landlock", async () => {
    await using sb = await Sandbox.create(mode);
    const marker = join(sb.hidden, probeName("preloaded"));
    const evil = join(sb.root, "evil.ts");
    writeFileSync(evil, `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "ran");`);
    writeFileSync(join(sb.root, "bunfig.toml"), `preload = ["./evil.ts"]\n`);
    writeFileSync(join(sb.root, ".env"), "HATCH_DOTENV=loaded\n");
    const spec = sb.spec();
    const r = await sb.run("env", { env: { ...spec.env, BUN_OPTIONS: `--preload ${evil}`, NODE_OPTIONS: `--require ${evil}` } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`BUN_OPTIONS=--preload ${evil}`); // passed through to the program, as given
    expect(r.stdout).not.toContain("HATCH_DOTENV");
    expect(sb.hostHas(marker)).toBe(false);
  });

  test("a descriptor inherited by the launcher (fd 9) does not reach the program", async () => {
    await using sb = await Sandbox.create(mode);
    const leakPath = join(sb.hidden, "leak.txt");
    const fd = openSync(leakPath, "w");
    try {
      const r = await sb.run("ls /proc/self/fd | sort -n | tr '\\n' ' '; echo leak >&9 2>/dev/null && echo WROTE", {}, { stdio: ["ignore", "ignore", "ignore", "ignore", "ignore", "ignore", fd] });
      expect(r.stdout).toBe("0 1 2 3 "); // 3 is ls's own handle on /proc/self/fd
    } finally {
      closeSync(fd);
    }
    expect(readFileSync(leakPath, "utf8")).toBe("");
  });

  test("mount and unshare -rm fail; no_new_privs is set and no capability is held", async () => {
    await using sb = await Sandbox.create(mode);
    const r = await sb.run(
      `mkdir mnt; mount -t tmpfs none mnt 2>/dev/null && echo MOUNTED; mount --bind '${sb.visible}' mnt 2>/dev/null && echo BOUND; unshare -rm true 2>/dev/null && echo UNSHARED; grep -E '^(NoNewPrivs|CapEff|CapPrm|CapBnd|CapAmb)' /proc/self/status`,
    );
    expect(r.stdout.split("\n").filter(Boolean)).toEqual([
      "CapPrm:\t0000000000000000",
      "CapEff:\t0000000000000000",
      "CapBnd:\t0000000000000000",
      "CapAmb:\t0000000000000000",
      "NoNewPrivs:\t1",
    ]);
  });

  test("a TCP connect to a listener on the host loopback fails and the listener sees nothing", async () => {
    await using sb = await Sandbox.create(mode);
    let accepted = 0;
    using listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open: () => void accepted++, data() {} } });
    const r = await sb.run(`echo hi > /dev/tcp/127.0.0.1/${listener.port} 2>/dev/null && echo CONNECTED; echo ${END}`);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${END}\n`);
    expect(accepted).toBe(0);
  });

  test("a read-only tab (no writable root) can write nothing but its scratch dir", async () => {
    await using sb = await Sandbox.create(mode);
    writeFileSync(join(sb.root, "existing.txt"), "keep");
    const r = await sb.run(`echo x > new.txt 2>/dev/null && echo W1; echo x >> existing.txt 2>/dev/null && echo W2; : > existing.txt 2>/dev/null && echo W3; echo ok > "$TMPDIR/s.txt" && cat "$TMPDIR/s.txt"`, {
      roots: [{ path: sb.root, write: false }],
    });
    expect(r.stdout).toBe("ok\n");
    expect(sb.hostHas(join(sb.root, "new.txt"))).toBe(false);
    expect(readFileSync(join(sb.root, "existing.txt"), "utf8")).toBe("keep");
  });

  test("a read-only rule below a writable root holds; the rest of the root stays writable", async () => {
    await using sb = await Sandbox.create(mode);
    const ro = join(sb.root, "vendor");
    const rw = join(sb.root, "src");
    for (const dir of [ro, rw]) await Bun.write(join(dir, "file.txt"), "orig");
    const r = await sb.run(`echo x > vendor/file.txt 2>/dev/null && echo W1; echo x > vendor/new.txt 2>/dev/null && echo W2; mv vendor vendor2 2>/dev/null && echo MOVED; echo x > src/file.txt && echo x > src/new.txt && echo RW-OK`, {
      roots: [
        { path: sb.root, write: true },
        { path: ro, write: false },
      ],
    });
    expect(r.stdout).toBe("RW-OK\n");
    expect(readFileSync(join(ro, "file.txt"), "utf8")).toBe("orig");
    expect(sb.hostHas(join(ro, "new.txt"))).toBe(false);
    expect(readFileSync(join(rw, "new.txt"), "utf8")).toBe("x\n");
  });

  test("a read-only rule deeper below a writable root cannot be side-stepped by renaming a directory above it", async () => {
    await using sb = await Sandbox.create(mode);
    const ro = join(sb.root, "lib", "vendor");
    await Bun.write(join(ro, "file.txt"), "orig");
    await Bun.write(join(sb.root, "lib", "own.txt"), "orig");
    const r = await sb.run(`mv lib lib.moved 2>/dev/null && echo MOVED; rmdir lib 2>/dev/null && echo REMOVED; mkdir -p lib/vendor 2>/dev/null; echo evil > lib/vendor/file.txt 2>/dev/null && echo REPLACED; echo ${END}`, {
      roots: [
        { path: sb.root, write: true },
        { path: ro, write: false },
      ],
    });
    expect(r.stdout).toBe(`${END}\n`);
    expect(readFileSync(join(ro, "file.txt"), "utf8")).toBe("orig");
    expect(sb.hostHas(join(sb.root, "lib.moved"))).toBe(false);
  });

  test("the helper and the service's own code stay read-only when a writable root contains them", async () => {
    await using sb = await Sandbox.create(mode);
    // An install inside a source root: the helper's files and the service's code, copied into the writable root.
    const install = join(sb.root, "hatch");
    const helperDir = join(install, "src", "confine");
    mkdirSync(helperDir, { recursive: true });
    const real = defaultLandlockHelper();
    for (const name of readdirSync(dirname(real.script)).filter((n) => n.endsWith(".ts"))) copyFileSync(join(dirname(real.script), name), join(helperDir, name));
    await Bun.write(join(install, "src", "main.ts"), "// service code\n");
    const helper = { bun: real.bun, script: join(helperDir, "landlock-exec.ts") };
    const options = { helper, neverWritable: [install] };
    const r = await sb.run(
      `echo 'console.error("PLANTED")' >> hatch/src/confine/landlock-exec.ts 2>/dev/null && echo W1; echo x >> hatch/src/main.ts 2>/dev/null && echo W2; mv hatch hatch.moved 2>/dev/null && echo MOVED; echo ${END}`,
      {},
      { options },
    );
    expect(r.stdout).toBe(`${END}\n`);
    expect(readFileSync(join(install, "src", "main.ts"), "utf8")).toBe("// service code\n");
    // The next confined spawn runs the helper as it was.
    const next = await sb.run(`echo NEXT-OK`, {}, { options });
    expect({ out: next.stdout, err: next.stderr }).toEqual({ out: "NEXT-OK\n", err: "" });
  });

  test("a deny path is unreadable while its siblings stay readable, even with the scratch dir inside it", async () => {
    await using sb = await Sandbox.create(mode);
    const privateDir = join(sb.visible, "private");
    await Bun.write(join(privateDir, "token.txt"), "private-token");
    const r = await sb.run(
      `cat '${sb.data}/secret.key' 2>/dev/null && echo READ1; cat '${privateDir}/token.txt' 2>/dev/null && echo READ2; cat '${sb.visible}/note.txt'; echo; echo in > "$TMPDIR/x" && echo SCRATCH-OK; cat '${sb.sibling}/readme.txt' 2>/dev/null`,
      { deny: [sb.data, privateDir] },
    );
    // The sibling of the data dir sits in the host /tmp: readable through "/" with Landlock alone, hidden by bwrap.
    const sibling = mode === "landlock" ? "sibling-content" : "";
    expect(r.stdout).toBe(`visible-content\nSCRATCH-OK\n${sibling}`);
  });

  test("a deny path inside the writable root stays unreadable and unwritable", async () => {
    await using sb = await Sandbox.create(mode);
    const inner = join(sb.root, "data");
    await Bun.write(join(inner, "db.sqlite"), "db-bytes");
    await Bun.write(join(sb.root, "src", "a.txt"), "a");
    const r = await sb.run(`cat data/db.sqlite 2>/dev/null && echo READ; echo x > data/db.sqlite 2>/dev/null && echo W1; echo x > data/planted 2>/dev/null && echo W2; echo b > src/a.txt && echo RW-OK`, { deny: [sb.data, inner] });
    expect(r.stdout).toBe("RW-OK\n");
    expect(readFileSync(join(inner, "db.sqlite"), "utf8")).toBe("db-bytes");
    expect(sb.hostHas(join(inner, "planted"))).toBe(false);
  });

  test("the directory above a deny path inside the writable root cannot be renamed away", async () => {
    await using sb = await Sandbox.create(mode);
    const inner = join(sb.root, "srv", "data");
    await Bun.write(join(inner, "db.sqlite"), "db-bytes");
    const r = await sb.run(`mv srv srv.moved 2>/dev/null && echo MOVED; mkdir -p srv/data 2>/dev/null; echo x > srv/data/db.sqlite 2>/dev/null && echo REPLACED; echo ${END}`, { deny: [sb.data, inner] });
    expect(r.stdout).toBe(`${END}\n`);
    expect(readFileSync(join(inner, "db.sqlite"), "utf8")).toBe("db-bytes");
  });

  test("a path the caller's policy allows again below one it denies is readable; the rest of the denied path stays unreadable and unwritable", async () => {
    await using sb = await Sandbox.create(mode);
    const secret = join(sb.root, "secret");
    await Bun.write(join(secret, "other.txt"), "other-secret");
    await Bun.write(join(secret, "pub", "p.txt"), "pub-content");
    await Bun.write(join(secret, "pub", "deep", "d.txt"), "deep-content");
    const r = await sb.run(
      `cat secret/pub/p.txt secret/pub/deep/d.txt; echo; cat secret/other.txt 2>/dev/null && echo READ; echo x > secret/pub/p.txt 2>/dev/null && echo W1; echo x > secret/planted 2>/dev/null && echo W2; mv secret secret.moved 2>/dev/null && echo MOVED; echo $(ls secret 2>/dev/null); echo ${END}`,
      { roots: [{ path: sb.root, write: true }, { path: join(secret, "pub"), write: false }], policyDeny: [secret] },
    );
    // Landlock alone lets names inside a denied directory be listed (a known limit); bwrap shows only what is re-opened there.
    const listed = mode === "landlock" ? "other.txt pub" : "pub";
    expect(r.stdout).toBe(`pub-contentdeep-content\n${listed}\n${END}\n`);
    expect([sb.hostHas(join(secret, "planted")), sb.hostHas(join(sb.root, "secret.moved")), readFileSync(join(secret, "pub", "p.txt"), "utf8")]).toEqual([false, false, "pub-content"]);
  });

  test("a path allowed rw again below a denied one is writable, but nothing of the denied path can be linked, moved or renamed into it", async () => {
    await using sb = await Sandbox.create(mode);
    const secret = join(sb.root, "secret");
    const pub = join(secret, "pub");
    await Bun.write(join(secret, "other.txt"), "other-secret");
    mkdirSync(pub);
    const r = await sb.run(
      `cd secret/pub && echo new > new.txt && echo W-OK; ln ../other.txt stolen 2>/dev/null && echo LINKED; mv ../other.txt stolen 2>/dev/null && echo MOVED; cat stolen 2>/dev/null && echo READ; mv ../pub ../pub2 2>/dev/null && echo RENAMED; echo ${END}`,
      { roots: [{ path: sb.root, write: true }, { path: pub, write: true }], policyDeny: [secret] },
    );
    expect(r.stdout).toBe(`W-OK\n${END}\n`);
    expect([readFileSync(join(pub, "new.txt"), "utf8"), sb.hostHas(join(pub, "stolen")), sb.hostHas(join(secret, "other.txt"))]).toEqual(["new\n", false, true]);
  });

  test("a host-secret dir is hidden, but a root below it shows through and stays writable", async () => {
    await using sb = await Sandbox.create(mode);
    const home = join(sb.visible, "home");
    const project = join(home, "project");
    await Bun.write(join(home, ".credentials"), "cloud-credential");
    await Bun.write(join(project, "main.c"), "int main;");
    const r = await sb.run(`cat '${home}/.credentials' 2>/dev/null && echo READ; cat main.c; echo; echo x > out.txt && echo WROTE`, { roots: [{ path: project, write: true }], cwd: project }, { options: { hostSecrets: [home] } });
    expect(r.stdout).toBe("int main;\nWROTE\n");
  });

  test("a read-only root below a host secret inside a writable root is readable; the secret's other entries stay out of reach", async () => {
    await using sb = await Sandbox.create(mode);
    const keys = join(sb.root, "keys");
    const project = join(keys, "project");
    await Bun.write(join(keys, "deploy.key"), "deploy-key");
    await Bun.write(join(project, "main.c"), "int main;");
    const r = await sb.run(`cat keys/project/main.c; echo; cat keys/deploy.key 2>/dev/null && echo READ; echo x > keys/planted 2>/dev/null && echo W1; echo x > keys/project/new 2>/dev/null && echo W2; echo ${END}`, {
      roots: [
        { path: sb.root, write: true },
        { path: project, write: false },
      ],
    }, { options: { hostSecrets: [keys] } });
    expect(r.stdout).toBe(`int main;\n${END}\n`);
    expect([sb.hostHas(join(keys, "planted")), sb.hostHas(join(project, "new"))]).toEqual([false, false]);
  });

  test("host secrets readable by uid 0 (shadow, raw disks, /proc/sys) stay out of reach", async () => {
    await using sb = await Sandbox.create(mode);
    const hostname = readFileSync("/proc/sys/kernel/hostname", "utf8").trim();
    const disk = ["/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/xvda"].find((d) => sb.hostHas(d)) ?? "/dev/vda";
    // Writing the current hostname back would be harmless even if it were allowed.
    const r = await sb.run(`head -c1 /etc/shadow 2>/dev/null && echo SHADOW; head -c1 ${disk} 2>/dev/null && echo DISK; echo '${hostname}' > /proc/sys/kernel/hostname 2>/dev/null && echo SYSCTL; echo ${END}`);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${END}\n`);
  });

  test("another session's terminal on the host cannot be read or written", async () => {
    await using sb = await Sandbox.create(mode);
    const other = Bun.spawn(["/bin/sleep", "30"], { terminal: { cols: 80, rows: 24 } });
    try {
      const pts = readlinkSync(`/proc/${other.pid}/fd/0`);
      const r = await sb.run(`timeout 2 head -c1 '${pts}' 2>/dev/null && echo READ; echo x > '${pts}' 2>/dev/null && echo WROTE; echo ${END}`);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${END}\n`);
    } finally {
      other.kill();
      other.terminal?.close();
    }
  });

  test("signals cannot reach a host process", async () => {
    await using sb = await Sandbox.create(mode);
    const host = Bun.spawn(["/bin/sleep", "30"], { stdio: ["ignore", "ignore", "ignore"] });
    try {
      const r = await sb.run(`kill -0 ${host.pid} 2>/dev/null && echo SIGNALLED; kill -TERM ${host.pid} 2>/dev/null && echo KILLED; echo ${END}`);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${END}\n`);
      // Still running: neither exited nor killed by a signal (a zombie would count as dead).
      expect(isAlive(host.pid)).toBe(true);
      expect(host.signalCode).toBeNull();
      expect(host.exitCode).toBeNull();
    } finally {
      host.kill();
    }
  });

  test("when the helper finds Landlock below the required ABI it exits 126 with a JSON error and never runs the program", async () => {
    await using sb = await Sandbox.create(mode);
    const marker = join(sb.root, probeName("ran"));
    const spec = sb.spec({ argv: ["/usr/bin/touch", marker] });
    // The probe is told ABI 99 so planning passes; the helper checks the real kernel and refuses.
    const cmd = sb.plan(spec, { minLandlockAbi: 99 }, { ...sb.probe, landlockAbi: 99 });
    const r = await runCommand(cmd);
    expect(r.code).toBe(126);
    expect(JSON.parse(r.stderr.trim().split("\n").at(-1)!).error.code).toBe("confinement_unavailable");
    expect(sb.hostHas(marker)).toBe(false);
  });

  test("no TCP connection through an MPTCP socket or TCP Fast Open (which Landlock's connect hook never sees): the host listener sees nothing", async () => {
    await using sb = await Sandbox.create(mode);
    let accepted = 0;
    let received = "";
    using listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open: () => void accepted++, data: (_s, d) => void (received += d.toString()) } });
    const to = `pack_sockaddr_in(${listener.port}, inet_aton("127.0.0.1"))`;
    // IPPROTO_MPTCP (262) falls back to plain TCP with any TCP peer; MSG_FASTOPEN (0x20000000) makes sendto() open the connection itself.
    const script = [
      "use Socket;",
      `if (socket(M, AF_INET, SOCK_STREAM, 262) && connect(M, ${to})) { syswrite(M, "via-mptcp"); print "MPTCP\\n" }`,
      `if (socket(F, AF_INET, SOCK_STREAM, 6) && defined send(F, "via-tfo", 0x20000000, ${to})) { print "FASTOPEN\\n" }`,
      `print "${END}\\n";`,
    ].join(" ");
    const r = await sb.run("", { argv: ["/usr/bin/perl", "-e", script] });
    expect(r.stdout).toBe(`${END}\n`);
    // A connection that got through would have been accepted by now: the program wrote and exited.
    await Bun.sleep(100);
    expect({ accepted, received }).toEqual({ accepted: 0, received: "" });
  });

  test("a host process's resource limits cannot be changed (prlimit), so it can be neither starved of fds nor killed through RLIMIT_CPU; its own still can (ulimit)", async () => {
    await using sb = await Sandbox.create(mode);
    const host = Bun.spawn(["/bin/sleep", "30"], { stdio: ["ignore", "ignore", "ignore"] });
    try {
      const limits = () => readFileSync(`/proc/${host.pid}/limits`, "utf8");
      const before = limits();
      const r = await sb.run(`prlimit --pid ${host.pid} --nofile=3:3 2>/dev/null && echo NOFILE; prlimit --pid ${host.pid} --cpu=1:1 2>/dev/null && echo CPU; ulimit -n 64 && ulimit -n; echo ${END}`);
      expect(r.stdout).toBe(`64\n${END}\n`);
      expect(limits()).toBe(before);
    } finally {
      host.kill();
    }
  });

  test("keys in the service user's kernel keyring can be neither read nor added", async () => {
    await using sb = await Sandbox.create(mode);
    // add_key and keyctl by number (x86_64, arm64): KEY_SPEC_USER_KEYRING -4, KEYCTL_SEARCH 10, KEYCTL_READ 11, KEYCTL_INVALIDATE 21.
    // perl hands its scalars to syscall() as pointers, and only writable ones: hence the variables.
    const [addKey, keyctl] = process.arch === "arm64" ? [217, 219] : [248, 250];
    const secret = `keyring-secret-${crypto.randomUUID()}`;
    const find = `my ($t, $n, $d) = ("user", "${probeName("key")}", "${secret}"); my $id = syscall(${keyctl}, 10, -4, $t, $n, 0);`;
    const perl = (code: string) => Bun.spawnSync(["/usr/bin/perl", "-e", `${find} ${code}`]).stdout.toString();
    expect(Number(perl(`print syscall(${addKey}, $t, $n, $d, length $d, -4);`))).toBeGreaterThan(0);
    try {
      const read = `my $buf = "\\0" x 128; my $len = $id > 0 ? syscall(${keyctl}, 11, $id, $buf, 128) : -1; print $len > 0 ? substr($buf, 0, $len) : "", "\\n";`;
      const add = `my ($n2, $d2) = ("${probeName("planted")}", "planted"); print syscall(${addKey}, $t, $n2, $d2, length $d2, -4) > 0 ? "ADDED\\n" : "", "${END}\\n";`;
      const r = await sb.run("", { argv: ["/usr/bin/perl", "-e", `${find} ${read} ${add}`] });
      expect(r.stdout).toBe(`\n${END}\n`);
    } finally {
      perl(`syscall(${keyctl}, 21, $id) if $id > 0;`);
    }
  });
});

describe("differences between the modes", () => {
  test("bwrap hides a host pathname unix socket under /tmp; Landlock alone cannot stop connect() to it", async () => {
    for (const mode of MODES) {
      await using sb = await Sandbox.create(mode);
      const path = join(sb.hidden, "host.sock");
      let accepted = 0;
      using server = Bun.listen({ unix: path, socket: { open: () => void accepted++, data() {} } });
      const script = `await Bun.connect({ unix: ${JSON.stringify(path)}, socket: { data() {} } }).then(() => console.log("CONNECTED"), () => console.log("REFUSED")); process.exit(0)`;
      const r = await sb.run("", { argv: [process.execPath, "--config=/dev/null", "-e", script] });
      if (mode === "landlock+bwrap") {
        expect(r.stdout.trim()).toBe("REFUSED");
        expect(accepted).toBe(0);
      } else {
        // Known limit, documented: Landlock has no control of connect() on pathname sockets before ABI 9
        // (LANDLOCK_ACCESS_FS_RESOLVE_UNIX), and hatch does not handle that right yet.
        expect(r.stdout.trim()).toBe("CONNECTED");
      }
    }
  });

  test("chmod of a host file outside the roots: bwrap refuses (read-only mount); Landlock alone cannot (known limit)", async () => {
    for (const mode of MODES) {
      await using sb = await Sandbox.create(mode);
      const victim = join(sb.visible, "mode.txt");
      writeFileSync(victim, "m");
      chmodSync(victim, 0o644);
      await sb.run(`chmod 600 '${victim}' 2>/dev/null; true`);
      const modeNow = statSync(victim).mode & 0o777;
      // Landlock has no right for chmod/chown/utimes; uid 0 owns the file, so only bwrap's read-only mount stops it.
      expect(modeNow).toBe(mode === "landlock+bwrap" ? 0o644 : 0o600);
    }
  });
});
