import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, type HatchConfig } from "../../src/config.ts";
import { startHatch, type Hatch, type HatchOverrides } from "../../src/main.ts";
import type { Agent, Project, User } from "../../src/platform/index.ts";
import { HttpClient } from "./http-client.ts";

/** The password every test user gets. */
export const TEST_PASSWORD = "test password 1";

/** A signed-in user of a test world. */
export interface Person {
  user: User;
  client: HttpClient;
}

/**
 * A whole hatch on ephemeral loopback ports with its own temp data dir, and
 * helpers that read like the specification:
 *
 * @example
 * await using world = await startWorld();
 * const project = await world.project("demo");
 * const member = await world.signedIn(project, "member");
 * expect((await member.client.get("/api/auth/me")).status).toBe(200);
 */
export class World {
  #counter = 0;
  readonly #cleanups: (() => void | Promise<void>)[] = [];

  private constructor(
    readonly hatch: Hatch,
    readonly config: HatchConfig,
  ) {}

  /** Start a world; `env` adds HATCH_* settings (a HATCH_DATA_DIR is created if missing, and removed with the world). */
  static async start(env: Record<string, string> = {}, overrides: HatchOverrides = {}): Promise<World> {
    const dataDir = env.HATCH_DATA_DIR ?? mkdtempSync(join(tmpdir(), "hatch-test-"));
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    try {
      const config = loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dataDir, HATCH_HOST: "127.0.0.1", ...env });
      // Sessions get an empty HOME, so the machine's own shell rc files (which may be slow or hang) stay out of the tests.
      const home = join(dataDir, "home");
      mkdirSync(home);
      return new World(await startHatch(config, { baseEnv: { ...process.env, HOME: home }, ...overrides }), config);
    } catch (error) {
      // A world that fails to start (a test of a refused setting) leaves no data dir behind.
      rmSync(dataDir, { recursive: true, force: true });
      throw error;
    }
  }

  get platform() {
    return this.hatch.platform;
  }

  /** A new anonymous client. */
  anonymous(): HttpClient {
    return new HttpClient(this.hatch.url);
  }

  /** Create a user with a unique email. */
  async user(name = "user"): Promise<User> {
    return this.platform.users.create(`${name}-${++this.#counter}@example.com`, TEST_PASSWORD);
  }

  /** Create a project owned by a new owner. */
  async project(slug = `p${this.#counter + 1}`): Promise<Project & { owner: User }> {
    const owner = await this.user("owner");
    const project = this.platform.projects.create(`${slug}-${++this.#counter}`, slug, owner.id);
    return { ...project, owner };
  }

  /** A new user holding `role` in the project, signed in with the project active. */
  async signedIn(project: Project & { owner?: User }, role: string): Promise<Person> {
    const user = role === "owner" && project.owner ? project.owner : await this.user(role);
    if (!(role === "owner" && project.owner)) this.platform.projects.setMember(project.id, user.id, role);
    return { user, client: await this.login(user.email, project.slug) };
  }

  /** Log a user in over HTTP and switch to a project. */
  login(email: string, projectSlug?: string): Promise<HttpClient> {
    return logIn(this.hatch.url, email, projectSlug);
  }

  /** An agent in the project owned by `owner`. */
  agent(project: Project, owner: User, options: { shared?: boolean; name?: string } = {}): Agent {
    return this.platform.agents.create(project.id, options.name ?? `agent-${++this.#counter}`, owner.id, options.shared ?? false);
  }

  /** A fresh temp dir outside the data dir (which the input screen protects), removed with the world. */
  tempDir(name = "tmp"): string {
    const dir = mkdtempSync(join(tmpdir(), `hatch-${name}-`));
    this.onDispose(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  /** Run `cleanup` when the world is disposed (temp dirs, fake servers). */
  onDispose(cleanup: () => void | Promise<void>): void {
    this.#cleanups.push(cleanup);
  }

  /** Stop the servers and delete the data dir. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.hatch.stop();
    for (const cleanup of this.#cleanups.reverse()) await cleanup();
    rmSync(this.config.dataDir, { recursive: true, force: true });
  }
}

/** Start a test world (see `World`). */
export const startWorld = (env?: Record<string, string>, overrides?: HatchOverrides) => World.start(env, overrides);

/** Log a user (with TEST_PASSWORD) in to the hatch at `baseUrl` and switch to a project: for tests that start and restart hatch themselves. */
export async function logIn(baseUrl: string, email: string, projectSlug?: string): Promise<HttpClient> {
  const client = new HttpClient(baseUrl);
  const response = await client.post("/api/auth/login", { email, password: TEST_PASSWORD });
  if (response.status !== 200) throw new Error(`login failed: ${response.status} ${JSON.stringify(response.body)}`);
  if (projectSlug) {
    const switched = await client.post("/api/auth/project", { project: projectSlug });
    if (switched.status !== 200) throw new Error(`project switch failed: ${switched.status}`);
  }
  return client;
}
