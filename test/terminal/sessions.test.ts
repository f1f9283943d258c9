import { describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { MAX_EXECS_PER_SESSION } from "../../src/pty/index.ts";
import { TERMINAL, attached, createSession, localSource, openTerminal, runAndSee } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { groupAlive, isAlive } from "../helpers/workflows.ts";
import { startWorld } from "../helpers/world.ts";

const scratchDirs = (dataDir: string) => (existsSync(join(dataDir, "scratch")) ? readdirSync(join(dataDir, "scratch")) : []);

describe("terminal sessions over HTTP", () => {
  test("the owner creates a Container Root session at /, lists it, reads it and deletes it; scratch goes with it", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const created = await createSession(owner.client, { sourceSlug: "container-root", id: "root1", cols: 100, rows: 30 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: "root1", sourceSlug: "container-root", cwd: "/", cols: 100, rows: 30, readOnly: false, fullScreen: false, createdAt: expect.any(Number) });
    expect((await owner.client.get(`${TERMINAL}/sessions`)).body.sessions.map((s: { id: string }) => s.id)).toEqual(["root1"]);
    expect((await owner.client.get(`${TERMINAL}/health`)).body.sessions).toBe(1);
    // Users never see each other's sessions, not even their number; a supervisor counts the project's.
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    expect([(await member.client.get(`${TERMINAL}/health`)).body.sessions, (await admin.client.get(`${TERMINAL}/health`)).body.sessions]).toEqual([0, 1]);
    expect(scratchDirs(world.config.dataDir)).toHaveLength(1);
    const terminal = await attached(world, owner, "root1");
    await runAndSee(terminal, "echo read-$((6*7))", "read-42");
    terminal.close();
    await terminal.closed;
    const read = () => owner.client.get(`${TERMINAL}/sessions/root1/read`);
    // The scrollback mirror parses on its own thread: wait until it has the line the socket showed.
    await waitFor(async () => (await read()).body.lines?.includes("read-42"), "the printed line in the scrollback");
    const lines = await read();
    expect(lines.status).toBe(200);
    expect(lines.body.lines).toContain("read-42");
    expect((await owner.client.delete(`${TERMINAL}/sessions/root1`)).status).toBe(200);
    expect((await owner.client.get(`${TERMINAL}/sessions`)).body.sessions).toEqual([]);
    expect(scratchDirs(world.config.dataDir)).toEqual([]);
    expect((await owner.client.delete(`${TERMINAL}/sessions/root1`)).status).toBe(404);
  });

  test("what a session started outside its process group ends with it: on terminate, and when its shell exits", async () => {
    await using world = await startWorld({ HATCH_CONFINEMENT: "landlock" });
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    localSource(world, project, "docs", { member: "rwx" });
    // Container Root (unconfined) and a Landlock-only tab: neither dies with a sandbox, so both need it.
    for (const [person, sourceSlug, end] of [[owner, "container-root", "terminate"], [member, "docs", "exit"]] as const) {
      await createSession(person.client, { sourceSlug, id: "s" });
      const terminal = await attached(world, person, "s");
      terminal.type("setsid sh -c 'echo escaped-$$-; exec sleep 300' & nohup sleep 301 >/dev/null 2>&1 & echo nohup-$!-\r");
      await terminal.sees(/escaped-\d+-/);
      await terminal.sees(/nohup-\d+-/);
      const [escaped, nohup] = [/escaped-(\d+)-/, /nohup-(\d+)-/].map((re) => Number(re.exec(terminal.output)![1]));
      expect([isAlive(escaped!), isAlive(nohup!)]).toEqual([true, true]);
      if (end === "terminate") expect((await person.client.delete(`${TERMINAL}/sessions/s`)).status).toBe(200);
      else terminal.type("exit\r");
      await waitFor(() => !isAlive(escaped!) && !isAlive(nohup!), `the ${sourceSlug} session's escaped processes to end`);
    }
  });

  test("what a session started that no environment sweep can find ends with it too: a pid-hopping chain, and a process with a cleared environment", async () => {
    await using world = await startWorld({ HATCH_CONFINEMENT: "landlock" });
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    localSource(world, project, "docs", { member: "rwx" });
    for (const [person, sourceSlug, end] of [[owner, "container-root", "exit"], [member, "docs", "terminate"]] as const) {
      await createSession(person.client, { sourceSlug, id: "s" });
      const terminal = await attached(world, person, "s");
      // Every process of the chain forks the next and exits at once; the chain's own session id (its group) outlives each pid.
      terminal.type(
        "setsid bash -c 'echo chain-$$-; hop(){ hop & }; hop' 2>/dev/null & env -i setsid sh -c 'echo cleared-$$-; exec sleep 302' &\r",
      );
      await terminal.sees(/chain-\d+-/);
      await terminal.sees(/cleared-\d+-/);
      const [chain, cleared] = [/chain-(\d+)-/, /cleared-(\d+)-/].map((re) => Number(re.exec(terminal.output)![1])) as [number, number];
      try {
        expect([groupAlive(chain), isAlive(cleared)]).toEqual([true, true]);
        if (end === "terminate") expect((await person.client.delete(`${TERMINAL}/sessions/s`)).status).toBe(200);
        else terminal.type("exit\r");
        await waitFor(() => !groupAlive(chain) && !isAlive(cleared), `the ${sourceSlug} session's chain and cleared process to end`, 5000);
      } finally {
        for (const target of [-chain, cleared]) {
          try {
            process.kill(target, "SIGKILL");
          } catch {}
        }
      }
    }
  }, 30_000);

  test("a create without a source is 400; a URI-shaped cwd is 400 and spawns nothing", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    const missing = await createSession(owner.client, { id: "x" });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe("source_required");
    for (const cwd of ["os://workspace", "data://files/a", "brain://notes", "s3://bucket/key"]) {
      const uri = await createSession(owner.client, { sourceSlug: "container-root", cwd });
      expect(uri.status).toBe(400);
      expect(uri.body.error.code).toBe("cwd_not_os_path");
    }
    expect(world.hatch.terminal.sessions.count()).toBe(0);
    expect(scratchDirs(world.config.dataDir)).toEqual([]);
  });

  test("a create with a bad id, a shell hatch does not offer, a size out of range or another user's namespace is refused with its code and spawns nothing", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    const refusals: [Record<string, unknown>, number, string][] = [
      [{ id: "has space" }, 400, "invalid_session_id"],
      [{ id: "x".repeat(65) }, 400, "invalid_request"],
      [{ id: "dot.ted" }, 400, "invalid_session_id"],
      [{ shell: "/usr/bin/python3" }, 400, "shell_not_allowed"],
      [{ cols: 1 }, 400, "invalid_request"],
      [{ cols: 1001 }, 400, "invalid_request"],
      [{ rows: 0 }, 400, "invalid_request"],
      [{ rows: 501 }, 400, "invalid_request"],
    ];
    for (const [body, status, code] of refusals) {
      const answer = await createSession(owner.client, { sourceSlug: "container-root", ...body });
      expect({ body, status: answer.status, code: answer.body.error?.code }).toEqual({ body, status, code });
    }
    // A supervisor addresses others' sessions with userId, but never creates one in their name.
    const elsewhere = await owner.client.post(`${TERMINAL}/sessions?userId=${member.user.id}`, { sourceSlug: "container-root", id: "theirs" });
    expect({ status: elsewhere.status, code: elsewhere.body.error?.code }).toEqual({ status: 403, code: "own_namespace_only" });
    expect(world.hatch.terminal.sessions.count()).toBe(0);
    expect(scratchDirs(world.config.dataDir)).toEqual([]);
  });

  test("an exec over 16 KiB or with a timeout outside 1-3600 s, and a read of lines outside 1-5000, are refused with 400 invalid_request", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "v" });
    const marker = join(world.tempDir("exec"), "ran");
    const refused = [
      await owner.client.post(`${TERMINAL}/sessions/v/exec`, { command: `touch ${marker} #${"x".repeat(16 * 1024)}` }),
      await owner.client.post(`${TERMINAL}/sessions/v/exec`, { command: `touch ${marker}`, timeoutSeconds: 0 }),
      await owner.client.post(`${TERMINAL}/sessions/v/exec`, { command: `touch ${marker}`, timeoutSeconds: 3601 }),
      await owner.client.get(`${TERMINAL}/sessions/v/read?lines=0`),
      await owner.client.get(`${TERMINAL}/sessions/v/read?lines=5001`),
    ];
    expect(refused.map((r) => [r.status, r.body.error?.code])).toEqual(Array(5).fill([400, "invalid_request"]));
    expect(existsSync(marker)).toBe(false);
    expect((await owner.client.get(`${TERMINAL}/sessions/v/read?lines=5000`)).status).toBe(200);
  });

  test("Container Root needs terminal.container: a member gets 403, an admin may", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    const denied = await createSession(member.client, { sourceSlug: "container-root" });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("feature_required");
    expect((await createSession(admin.client, { sourceSlug: "container-root" })).status).toBe(201);
  });

  test("an existing id with another working directory is 409 and never rebinds; the same one returns the live session", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "s1", cwd: "/" })).status).toBe(201);
    const again = await createSession(owner.client, { sourceSlug: "container-root", id: "s1", cwd: "/" });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe("s1");
    const rebind = await createSession(owner.client, { sourceSlug: "container-root", id: "s1", cwd: "/tmp" });
    expect(rebind.status).toBe(409);
    expect(rebind.body.error.code).toBe("session_exists");
    expect((await owner.client.get(`${TERMINAL}/sessions`)).body.sessions).toEqual([expect.objectContaining({ id: "s1", cwd: "/" })]);
  });

  test("an existing id opened on another source is 409, even where both sources share the root", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const writable = localSource(world, project, "docs", { member: "rwx" });
    // A second tab on the same directory that only lets members read it.
    const store = world.hatch.terminal.sources;
    const readOnly = store.add(project.id, { slug: "docs-ro", kind: "local", root: writable.root });
    store.addRule(readOnly, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });
    const first = await createSession(member.client, { sourceSlug: "docs", id: "s1" });
    expect({ status: first.status, readOnly: first.body.readOnly }).toEqual({ status: 201, readOnly: false });
    // Asking for the read-only tab must not hand back the writable session that holds the id.
    const other = await createSession(member.client, { sourceSlug: "docs-ro", id: "s1" });
    expect(other.status).toBe(409);
    expect(other.body.error).toEqual({ code: "session_exists", message: 'Cannot create session "s1": it exists on another source' });
    expect((await createSession(member.client, { sourceSlug: "docs", id: "s1" })).status).toBe(200);
  });

  test("20 parallel creates of one id make one PTY and one scratch dir", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    const answers = await Promise.all(Array.from({ length: 20 }, () => createSession(owner.client, { sourceSlug: "container-root", id: "same" })));
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(19).fill(200), 201]);
    expect(world.hatch.terminal.sessions.count()).toBe(1);
    expect(scratchDirs(world.config.dataDir)).toHaveLength(1);
  });

  test("more live sessions than Terminal: Max Sessions for one key is 429; other namespaces are counted apart", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    world.platform.settings.set("terminalMaxSessions", 2, null);
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "a" })).status).toBe(201);
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "b" })).status).toBe(201);
    const third = await createSession(owner.client, { sourceSlug: "container-root", id: "c" });
    expect(third.status).toBe(429);
    expect(third.body.error.code).toBe("session_limit");
    const agent = world.agent(project, owner.user);
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "c", agentId: agent.id })).status).toBe(201);
    expect(scratchDirs(world.config.dataDir)).toHaveLength(3);
  });

  test("every agent has its own namespace; an agent the caller cannot use answers exactly like a missing session", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const other = await world.signedIn(project, "member");
    const mine = world.agent(project, owner.user);
    const theirs = world.agent(project, other.user);
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "s", agentId: mine.id })).status).toBe(201);
    expect((await owner.client.get(`${TERMINAL}/sessions`)).body.sessions).toEqual([]);
    expect((await owner.client.get(`${TERMINAL}/sessions?agentId=${mine.id}`)).body.sessions).toHaveLength(1);
    const missing = await owner.client.get(`${TERMINAL}/sessions/nope/read?agentId=${mine.id}`);
    const unusable = await owner.client.get(`${TERMINAL}/sessions/nope/read?agentId=${theirs.id}`);
    const unknown = await owner.client.get(`${TERMINAL}/sessions/nope/read?agentId=no-such-agent`);
    expect(missing.status).toBe(404);
    expect(unusable.body).toEqual(missing.body);
    expect(unknown.body).toEqual(missing.body);
    const create = await createSession(owner.client, { sourceSlug: "container-root", id: "t", agentId: theirs.id });
    expect(create.status).toBe(404);
  });

  test("users never see each other's sessions; scope=project is for terminal.supervise holders", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    const agent = world.agent(project, owner.user);
    await createSession(owner.client, { sourceSlug: "container-root", id: "mine" });
    await createSession(owner.client, { sourceSlug: "container-root", id: "agents", agentId: agent.id });
    expect((await member.client.get(`${TERMINAL}/sessions`)).body.sessions).toEqual([]);
    expect((await member.client.get(`${TERMINAL}/sessions/mine/read`)).status).toBe(404);
    expect((await member.client.get(`${TERMINAL}/sessions/mine/read?userId=${owner.user.id}`)).status).toBe(404);
    expect((await member.client.delete(`${TERMINAL}/sessions/mine?userId=${owner.user.id}`)).status).toBe(404);
    expect((await member.client.get(`${TERMINAL}/sessions?scope=project`)).status).toBe(403);
    const all = await admin.client.get(`${TERMINAL}/sessions?scope=project`);
    expect(all.body.sessions.map((s: any) => [s.id, s.userId, s.agentId, s.sourceSlug]).sort()).toEqual([
      ["agents", owner.user.id, agent.id, "container-root"],
      ["mine", owner.user.id, null, "container-root"],
    ]);
    // The supervisor terminates with the full identity.
    expect((await admin.client.delete(`${TERMINAL}/sessions/agents?userId=${owner.user.id}&agentId=${agent.id}`)).status).toBe(200);
    expect((await owner.client.get(`${TERMINAL}/sessions?agentId=${agent.id}`)).body.sessions).toEqual([]);
    const audit = world.platform.audit.query({ projectId: project.id, action: "terminal.terminate" });
    expect(audit[0]).toMatchObject({ userId: admin.user.id, agentId: agent.id, target: "agents", detail: { sessionUserId: owner.user.id } });
  });

  test("sensitive variables never reach the session; the create body adds variables but cannot re-add a stripped one", async () => {
    process.env.HATCH_TEST_API_TOKEN = "tok-should-not-leak";
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    const created = await createSession(owner.client, { sourceSlug: "container-root", id: "env", env: { GREETING: "hello-env", AWS_SECRET_ACCESS_KEY: "nope", TMPDIR: "/tmp" } });
    expect(created.status).toBe(201);
    const result = await owner.client.post(`${TERMINAL}/sessions/env/exec`, { command: "env" });
    delete process.env.HATCH_TEST_API_TOKEN;
    expect(result.status).toBe(200);
    const env = result.body.output as string;
    expect(env).toContain("GREETING=hello-env");
    expect(env).not.toContain("tok-should-not-leak");
    expect(env).not.toContain("AWS_SECRET_ACCESS_KEY");
    expect(env).not.toContain("HATCH_SECRET_KEY");
    for (const name of ["TMPDIR", "TMP", "TEMP", "CLAUDE_CODE_TMPDIR"]) expect(env).toMatch(new RegExp(`^${name}=${world.config.dataDir}/scratch/`, "m"));
  });

  test("a caller who may not type (an admin: no core.execute) cannot run a command through the create body's env", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const marker = join(world.tempDir("ran"), "ran-by-admin");
    // bash runs PROMPT_COMMAND before its first prompt: no keystroke, no exec (403 for the admin), no screening.
    const env = { PROMPT_COMMAND: `touch ${marker}`, BASH_ENV: `/nonexistent`, GREETING: "from-the-body", LANG: "C.UTF-8", LC_ALL: "C.UTF-8" };
    expect((await createSession(admin.client, { sourceSlug: "container-root", id: "a", env, shell: "/bin/bash" })).status).toBe(201);
    expect((await admin.client.post(`${TERMINAL}/sessions/a/exec`, { command: `touch ${marker}` })).status).toBe(403);
    await waitFor(async () => (await admin.client.get(`${TERMINAL}/sessions/a/read`)).body.lines?.some((line: string) => line.trim() !== ""), "the shell's first prompt");
    expect(existsSync(marker)).toBe(false);
    // What the shell got, seen from outside: only the names that describe the admin's terminal.
    const shell = world.hatch.terminal.sessions.get({ userId: admin.user.id, projectId: project.id, agentId: null, id: "a" });
    const shellEnv = readFileSync(`/proc/${shell.pid}/environ`, "utf8").split("\0");
    expect(shellEnv).toEqual(expect.arrayContaining(["LANG=C.UTF-8", "LC_ALL=C.UTF-8"]));
    // (The server's own environment is not the body's to change: only what the body asked for is checked.)
    expect(shellEnv.filter((kv) => /^(PROMPT_COMMAND|BASH_ENV|GREETING)=/.test(kv))).toEqual([]);
  });

  test("a caller who types still cannot set what runs code before the first line (PROMPT_COMMAND, PS1, BASH_ENV, LD_PRELOAD)", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    const marker = join(world.tempDir("ran"), "ran-at-start");
    const env = { PROMPT_COMMAND: `touch ${marker}`, PS1: `$(touch ${marker})> `, BASH_ENV: "/nonexistent", LD_PRELOAD: "/nonexistent.so", EDITOR: "vim" };
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "m", env, shell: "/bin/bash" })).status).toBe(201);
    // Whatever the server's own environment holds, none of these comes from the body; EDITOR, which runs nothing at start, does.
    const seen = await owner.client.post(`${TERMINAL}/sessions/m/exec`, { command: 'printf "%s|" "$PROMPT_COMMAND" "$PS1" "$BASH_ENV" "$LD_PRELOAD" "$EDITOR"' });
    expect(seen.body.output).toEndWith("|vim|");
    expect(seen.body.output).not.toContain(marker);
    expect(seen.body.output).not.toContain("/nonexistent");
    await waitFor(async () => (await owner.client.get(`${TERMINAL}/sessions/m/read`)).body.lines?.some((line: string) => line.trim() !== ""), "the shell's first prompt");
    expect(existsSync(marker)).toBe(false);
  });

  test("a caller who types cannot hand the shell code through MAILPATH either: bash expands its message (with $(…)) at a prompt, unscreened", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    const dir = world.tempDir("mail");
    const mailFile = join(dir, "mbox");
    writeFileSync(mailFile, "");
    const marker = join(dir, "ran-from-mailpath");
    // Typed, this line is refused (`access to the password hashes`); as a mail message it is never screened.
    const env = { MAILCHECK: "0", MAILPATH: `${mailFile}?$(touch ${marker}; cat /etc/shadow > /dev/null)` };
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "mail", env, shell: "/bin/bash" })).status).toBe(201);
    const terminal = await attached(world, owner, "mail");
    await runAndSee(terminal, "echo first-$((6*7))", "first-42");
    // New mail arrives (any writer will do: another tab, a workflow run, a log the file names); the next prompt checks it.
    await Bun.sleep(1100);
    appendFileSync(mailFile, "From someone\n");
    await runAndSee(terminal, "echo second-$((6*7))", "second-42");
    await runAndSee(terminal, "echo third-$((6*7))", "third-42");
    expect(existsSync(marker)).toBe(false);
  });

  test("resize updates the PTY at once", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "r" });
    expect((await owner.client.post(`${TERMINAL}/sessions/r/resize`, { cols: 132, rows: 43 })).status).toBe(200);
    expect((await owner.client.get(`${TERMINAL}/sessions`)).body.sessions[0]).toMatchObject({ cols: 132, rows: 43 });
    expect((await owner.client.post(`${TERMINAL}/sessions/r/resize`, { cols: 0, rows: 43 })).status).toBe(400);
    expect((await owner.client.post(`${TERMINAL}/sessions/nope/resize`, { cols: 80, rows: 24 })).status).toBe(404);
  });

  test("a caller with no cookie gets 401 from the terminal routes, whatever the query or body", async () => {
    await using world = await startWorld();
    const anonymous = world.anonymous();
    expect((await anonymous.get(`${TERMINAL}/sessions`)).status).toBe(401);
    expect((await anonymous.get(`${TERMINAL}/sessions?scope=everything`)).status).toBe(401);
    expect((await anonymous.get(`${TERMINAL}/sessions/x/read?lines=0`)).status).toBe(401);
    expect((await anonymous.post(`${TERMINAL}/sessions`, "[]")).status).toBe(401);
    expect((await anonymous.post(`${TERMINAL}/sessions/x/exec`, { command: "" })).status).toBe(401);
    expect((await anonymous.post(`${TERMINAL}/sessions/x/resize`, { cols: 0 })).status).toBe(401);
  });
});

describe("exec", () => {
  test("runs in the session's working directory, returns ANSI-stripped output, capped by Terminal: Exec Output Cap", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "x", cwd: "/usr" });
    const pwd = await owner.client.post(`${TERMINAL}/sessions/x/exec`, { command: "pwd; printf '\\033[31mred\\033[0m\\n'" });
    expect(pwd.body).toMatchObject({ exitCode: 0, output: "/usr\nred\n", truncated: false, timedOut: false });
    // What tput prints under the session's TERM: sgr0 designates a charset (ESC ( B), sc/rc are ESC 7/ESC 8, smkx/rmkx ESC =/ESC >.
    const tput = await owner.client.post(`${TERMINAL}/sessions/x/exec`, { command: "printf 'a\\033(Bb\\0337c\\0338d\\033=e\\033>f\\033cg\\033#8h\\n'" });
    expect(tput.body.output).toBe("abcdefgh\n");
    world.platform.settings.set("terminalExecOutputCapBytes", 1024, null);
    const big = await owner.client.post(`${TERMINAL}/sessions/x/exec`, { command: "head -c 100000 /dev/zero | tr '\\0' a" });
    expect(big.body.output).toHaveLength(1024);
    expect(big.body.truncated).toBe(true);
  });

  test("the cap counts the stripped text: colour codes do not use it up, and a cut never splits a character", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "c" });
    world.platform.settings.set("terminalExecOutputCapBytes", 1024, null);
    // 3,300 bytes written, 600 characters once stripped: under the cap, so all of it comes back.
    const coloured = await owner.client.post(`${TERMINAL}/sessions/c/exec`, { command: "for i in $(seq 300); do printf '\\033[31mab\\033[0m'; done" });
    expect(coloured.body).toMatchObject({ output: "ab".repeat(300), truncated: false });
    // 3,900 bytes written, 2,400 characters once stripped: cut at the cap.
    const long = await owner.client.post(`${TERMINAL}/sessions/c/exec`, { command: "for i in $(seq 300); do printf '\\033[31mabcdefgh'; done" });
    expect(long.body).toMatchObject({ output: "abcdefgh".repeat(128), truncated: true });
    // Two bytes per character: 1,024 bytes hold 512 whole characters.
    const wide = await owner.client.post(`${TERMINAL}/sessions/c/exec`, { command: "for i in $(seq 600); do printf '\\303\\251'; done" });
    expect(wide.body).toMatchObject({ output: "\u00e9".repeat(512), truncated: true });
    // Mostly escape codes past the raw bound: a sequence cut in half leaves nothing behind.
    const noisy = await owner.client.post(`${TERMINAL}/sessions/c/exec`, { command: "for i in $(seq 2000); do printf '\\033]0;a long window title\\007'; done; printf 'x'" });
    expect(noisy.body.truncated).toBe(true);
    expect(noisy.body.output).not.toContain("\x1b");
  });

  test("each exec is audited as terminal.exec with its outcome and the command's size in bytes, never its text", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "e" });
    const command = "echo é; exit 3"; // 14 characters, 15 bytes
    expect((await owner.client.post(`${TERMINAL}/sessions/e/exec`, { command })).body.exitCode).toBe(3);
    const rows = world.platform.audit.query({ projectId: project.id, action: "terminal.exec" });
    expect(rows).toEqual([expect.objectContaining({ userId: owner.user.id, target: "e", detail: { sessionUserId: owner.user.id, exitCode: 3, timedOut: false, commandBytes: 15 } })]);
  });

  test("an exec stopped by its session's end is still audited, with what stopped it", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "d" });
    const marker = join(world.tempDir("exec"), "ran");
    const command = `touch ${marker}; sleep 30`;
    const running = owner.client.post(`${TERMINAL}/sessions/d/exec`, { command, timeoutSeconds: 60 });
    await waitFor(() => existsSync(marker), "the exec's command to run");
    expect((await owner.client.delete(`${TERMINAL}/sessions/d`)).status).toBe(200);
    const stopped = await running;
    expect(stopped.status).toBe(409);
    const rows = world.platform.audit.query({ projectId: project.id, action: "terminal.exec" });
    expect(rows).toEqual([expect.objectContaining({ userId: owner.user.id, target: "d", detail: { sessionUserId: owner.user.id, error: "session_closed", commandBytes: command.length } })]);
  });

  test("a command past its timeout is killed with its whole process group", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "t" });
    const pidFile = join(world.tempDir("exec"), "grandchild.pid");
    // A background subshell starts a grandchild and records its pid; the foreground outlives the timeout.
    const result = await owner.client.post(`${TERMINAL}/sessions/t/exec`, { command: `(sleep 300 & echo $! > ${pidFile}; wait) & sleep 30`, timeoutSeconds: 1 });
    expect(result.body).toMatchObject({ exitCode: null, timedOut: true });
    const grandchild = Number(readFileSync(pidFile, "utf8"));
    expect(grandchild).toBeGreaterThan(0);
    await waitFor(() => !isAlive(grandchild), "the grandchild to die");
  });

  test("the answer comes at the timeout even when a process that left the group keeps the output open", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const pidFile = join(world.tempDir("exec"), "escaped.pid");
    // setsid puts the sleep in a session of its own, out of reach of the group kill; it holds stdout for 60 s (past this test's timeout).
    const result = await owner.client.post(`${TERMINAL}/sessions/s/exec`, { command: `setsid sh -c 'echo $$ > ${pidFile}; exec sleep 60' & echo started`, timeoutSeconds: 1 });
    const escaped = Number(readFileSync(pidFile, "utf8"));
    process.kill(escaped, "SIGKILL");
    expect(result.body).toMatchObject({ output: "started\n", exitCode: null, timedOut: true });
  });

  test("terminating the session stops a running exec: 409 session_closed, and the command is killed", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "d" });
    const pidFile = join(world.tempDir("exec"), "shell.pid");
    const running = owner.client.post(`${TERMINAL}/sessions/d/exec`, { command: `echo $$ > ${pidFile}; sleep 30`, timeoutSeconds: 60 });
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").endsWith("\n"), "the exec to start");
    const shell = Number(readFileSync(pidFile, "utf8"));
    expect((await owner.client.delete(`${TERMINAL}/sessions/d`)).status).toBe(200);
    const answer = await running;
    expect({ status: answer.status, code: answer.body.error.code }).toEqual({ status: 409, code: "session_closed" });
    await waitFor(() => !isAlive(shell), "the exec's shell to die");
  });

  test(`a session runs at most ${MAX_EXECS_PER_SESSION} execs at once: one more is refused with 429 too_many_execs and audited, and a place freed is taken again`, async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "x" });
    const started = world.tempDir("execs");
    const release = join(started, "release");
    // Each exec marks that it runs, then waits for the test to let it go.
    const running = Array.from({ length: MAX_EXECS_PER_SESSION }, (_, i) =>
      owner.client.post(`${TERMINAL}/sessions/x/exec`, { command: `touch ${join(started, `run-${i}`)}; while [ ! -e ${release} ]; do sleep 0.05; done; echo done-${i}`, timeoutSeconds: 60 }),
    );
    await waitFor(() => readdirSync(started).length === MAX_EXECS_PER_SESSION, "every exec to run");
    const refused = await owner.client.post(`${TERMINAL}/sessions/x/exec`, { command: "echo one-too-many" });
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 429, code: "too_many_execs" });
    writeFileSync(release, "");
    expect((await Promise.all(running)).map((r) => r.body.output)).toEqual(Array.from({ length: MAX_EXECS_PER_SESSION }, (_, i) => `done-${i}\n`));
    expect((await owner.client.post(`${TERMINAL}/sessions/x/exec`, { command: "echo again" })).body.output).toBe("again\n");
    const errors = world.platform.audit.query({ projectId: project.id, action: "terminal.exec" }).filter((row) => row.detail?.error);
    expect(errors.map((row) => row.detail?.error)).toEqual(["too_many_execs"]);
  });

  test("a missing session is refused; a caller without core.execute gets 403", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const admin = await world.signedIn(project, "admin");
    expect((await owner.client.post(`${TERMINAL}/sessions/none/exec`, { command: "true" })).status).toBe(404);
    await createSession(admin.client, { sourceSlug: "container-root", id: "a" });
    expect((await admin.client.post(`${TERMINAL}/sessions/a/exec`, { command: "true" })).status).toBe(403);
    expect((await owner.client.post(`${TERMINAL}/sessions/none/exec`, {})).status).toBe(400);
  });

  test("a command holding a NUL byte is refused with 400 invalid_command, and the session goes on", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    localSource(world, project, "docs", { member: "rwx" });
    await createSession(member.client, { sourceSlug: "docs", id: "d" });
    const refused = await member.client.post(`${TERMINAL}/sessions/d/exec`, { command: "echo a\u0000b" });
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 400, code: "invalid_command" });
    expect((await member.client.post(`${TERMINAL}/sessions/d/exec`, { command: "echo ab" })).body.output).toBe("ab\n");
  });
});

describe("local sources", () => {
  test("a session on a local source starts at the source root", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const source = localSource(world, project, "docs");
    const created = await createSession(member.client, { sourceSlug: "docs", id: "d" });
    expect(created.status).toBe(201);
    expect(created.body.cwd).toBe(source.root);
    const pwd = await member.client.post(`${TERMINAL}/sessions/d/exec`, { command: "pwd" });
    expect(pwd.body.output.trim()).toBe(source.root);
  });
});

describe("one session's output and everyone's screens", () => {
  test("a program printing scroll-up with xterm's largest count (15 bytes) leaves other users' terminals their screen and their output", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const other = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "culprit" });
    await createSession(other.client, { sourceSlug: "container-root", id: "bystander" });
    const culprit = await attached(world, owner, "culprit");
    await runAndSee(culprit, "printf 'before-%s\\n' $((6*7)); printf '\\033[2147483647S'", "before-42");
    // Another user, another session: opening its terminal gets the screen, and a build log past the backlog at
    // which the PTY pauses (4 MiB) still reaches its end.
    const view = await openTerminal(world, other, "bystander");
    await view.control("snapshot", () => true, 5000);
    view.type("head -c 6000000 /dev/zero | tr '\\0' y; echo; echo built-$((6*7))\r");
    await view.sees("built-42", 20_000);
  }, 40_000);
});


describe("exec and the input screen", () => {
  test("a command the screen refuses when typed is refused through exec on the same session too (403 command_blocked, audited), and one it lets through runs", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const keyFile = join(world.config.dataDir, "secret.key");
    expect(existsSync(keyFile)).toBe(true);
    // Typed, the line never runs: the data dir is protected.
    const terminal = await attached(world, owner, "s");
    terminal.type(`wc -c ${keyFile}\r`);
    const blocked = await terminal.control("blocked");
    expect(blocked.reason).toBe("access to a protected hatch directory");
    // Posted, neither: nor on a later line of a longer script.
    for (const command of [`wc -c ${keyFile}`, `echo fine\ncat ${keyFile} | base64`]) {
      const viaExec = await owner.client.post(`${TERMINAL}/sessions/s/exec`, { command });
      expect({ status: viaExec.status, code: viaExec.body.error?.code, message: viaExec.body.error?.message }).toEqual({
        status: 403,
        code: "command_blocked",
        message: "The command was not run: access to a protected hatch directory",
      });
    }
    const ok = await owner.client.post(`${TERMINAL}/sessions/s/exec`, { command: "echo fine" });
    expect({ status: ok.status, output: ok.body.output }).toEqual({ status: 200, output: "fine\n" });
    const entries = world.platform.audit.query({ projectId: project.id, action: "terminal.blocked" }).filter((entry) => entry.detail?.via === "exec");
    expect(entries.map((entry) => entry.detail?.reason)).toEqual(["access to a protected hatch directory", "access to a protected hatch directory"]);
  });

  test("a command that would cost the screen more than it may (16 KiB of `cd a;`, each moving every later word one level deeper) is refused as too complex to screen, typed or through exec", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const command = "cd a;".repeat(3276);
    const viaExec = await owner.client.post(`${TERMINAL}/sessions/s/exec`, { command });
    expect({ status: viaExec.status, code: viaExec.body.error?.code, message: viaExec.body.error?.message }).toEqual({ status: 403, code: "command_blocked", message: "The command was not run: line too complex to screen" });
    const terminal = await attached(world, owner, "s");
    terminal.type(`${command}\r`);
    expect((await terminal.control("blocked")).reason).toBe("line too complex to screen");
  });
});

describe("exec and the input screen: line breaks", () => {
  test("a line break separates commands for the exec screen as it does for the shell: a refused command on a later line, after a harmless one, is refused too", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const dataDir = world.config.dataDir;
    // Each is refused on one line (`;` between its commands); typed line by line at the shell, each second line is refused too.
    // The third is a backslash-newline inside a word, which the shell removes: it names the data dir's secret.key.
    const scripts: [string, string][] = [
      [`cd ${dirname(dataDir)}\nwc -c ${basename(dataDir)}/secret.key`, `cd ${dirname(dataDir)}; wc -c ${basename(dataDir)}/secret.key`],
      ["true\nprintenv OPENAI_API_KEY", "true; printenv OPENAI_API_KEY"],
      [`wc -c ${dataDir.slice(0, 8)}\\\n${dataDir.slice(8)}/secret.key`, `wc -c ${dataDir}/secret.key`],
    ];
    const seen: { script: string; oneLine: number; twoLines: number; ran: string | null }[] = [];
    for (const [script, same] of scripts) {
      const oneLine = await owner.client.post(`${TERMINAL}/sessions/s/exec`, { command: same });
      const twoLines = await owner.client.post(`${TERMINAL}/sessions/s/exec`, { command: script });
      seen.push({ script, oneLine: oneLine.status, twoLines: twoLines.status, ran: twoLines.body.output ?? null });
    }
    expect(seen).toEqual(scripts.map(([script]) => ({ script, oneLine: 403, twoLines: 403, ran: null })));
  });
});
