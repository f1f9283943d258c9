import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { attached, createSession, runAndSee } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";

/** Harmless probes: each line is blocked by the screen, and would only touch a marker if it ran. */
describe("line-buffered input screening", () => {
  test("a blocked line never executes; the client gets blocked with a reason and the audit log gets terminal.blocked", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await attached(world, owner, "s");
    const marker = join(world.tempDir("marker"), "blocked-ran");
    terminal.type(`touch ${marker}; cat /etc/shadow > /dev/null\r`);
    const blocked = await terminal.control("blocked");
    expect(blocked.reason).toBe("access to the password hashes (/etc/shadow)");
    await runAndSee(terminal, "echo after-$((2*21))", "after-42");
    expect(existsSync(marker)).toBe(false);
    const audit = await waitFor(() => world.platform.audit.query({ projectId: project.id, action: "terminal.blocked" })[0], "terminal.blocked");
    expect(audit).toMatchObject({ userId: owner.user.id, target: "s", detail: { reason: blocked.reason } });
  });

  test("a blocked line recalled from history is caught too", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await attached(world, owner, "s");
    const marker = join(world.tempDir("marker"), "recalled-ran");
    // Put the line into history without running it: a leading `#` makes it a comment.
    await runAndSee(terminal, `#touch ${marker}; cat ~/.ssh/id_rsa`, "id_rsa");
    // Recall it, remove the `#` (Home, Delete), then Enter: the typed bytes alone hold no command.
    terminal.type("\x1b[A");
    await terminal.sees(/id_rsa[\s\S]*id_rsa/);
    terminal.type("\x01\x1b[3~\r");
    await terminal.control("blocked");
    await runAndSee(terminal, "echo next-$((7*6))", "next-42");
    expect(existsSync(marker)).toBe(false);
  });

  test("a pasted block with a blocked line in the middle runs the lines around it only", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await attached(world, owner, "s");
    const before = join(world.tempDir("marker"), "before");
    const bad = join(world.tempDir("marker"), "bad");
    const after = join(world.tempDir("marker"), "after");
    terminal.type(`touch ${before}\rtouch ${bad}; printenv HATCH_SECRET_KEY\rtouch ${after}\r`);
    await terminal.control("blocked");
    await waitFor(() => existsSync(after), "the line after the blocked one");
    expect(existsSync(before)).toBe(true);
    expect(existsSync(bad)).toBe(false);
  });

  test("a paste carrying Ctrl+U is screened as a shell without line editing reads it", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await attached(world, owner, "s");
    const marker = join(world.tempDir("marker"), "bypass-ran");
    // Without readline the tty's cooked mode applies Ctrl+U itself: the shell would run only what follows it.
    await runAndSee(terminal, "set +o emacs +o vi; echo cooked-$((3*3))", "cooked-9");
    terminal.type(`\x1b[200~true\x15printenv HATCH_SECRET_KEY; touch ${marker} #\x1b[201~\r`);
    await terminal.control("blocked");
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect(existsSync(marker)).toBe(false);
  });

  test("input past the token bucket is dropped with a notice and the session lives on", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await attached(world, owner, "s");
    const chunk = "#".repeat(60 * 1024);
    terminal.type(chunk);
    terminal.type(chunk);
    const notice = await terminal.control("notice");
    expect(notice.message).toContain("too fast");
    terminal.type("\x15");
    await runAndSee(terminal, "echo alive-$((8*8))", "alive-64");
  });
});
