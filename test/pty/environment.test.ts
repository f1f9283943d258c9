import { describe, expect, test } from "bun:test";
import { buildSessionEnv, isSensitiveEnvName } from "../../src/pty/environment.ts";
import { createSession, localSource, TERMINAL } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

describe("sensitive variable names", () => {
  const sensitive = [
    "GITHUB_TOKEN", "GH_TOKEN", "NPM_TOKEN", "npm_config__authtoken", "NPM_CONFIG__AUTH", "npm_config_//registry.npmjs.org/:_authToken",
    "NODE_AUTH_TOKEN", "SLACK_BOT_TOKEN", "HF_TOKEN", "CI_JOB_TOKEN", "ACTIONS_RUNTIME_TOKEN",
    "DJANGO_SECRET_KEY", "CLIENT_SECRET", "PGPASSWORD", "MYSQL_PWD", "SMTP_PASS", "SUDO_PASSWD", "GPG_PASSPHRASE",
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "STRIPE_KEY", "APIKEY", "MY_KEY_ID",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID",
    "GOOGLE_APPLICATION_CREDENTIALS", "GCP_PROJECT", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", "DIGITALOCEAN_ACCESS_TOKEN", "KUBECONFIG",
    "VAULT_ADDR", "SSH_AUTH_SOCK", "GIT_ASKPASS", "VSCODE_GIT_IPC_HANDLE", "GIT_CONFIG_VALUE_0", "XAUTHORITY",
    "DATABASE_URL", "REDIS_URL", "MONGODB_URI", "SENTRY_DSN", "SLACK_WEBHOOK_URL", "BASIC_AUTH", "SESSION_COOKIE", "JWT",
    "HATCH_SECRET_KEY", "HATCH_DATA_DIR", "hatch_shell",
    "GITHUB_PAT", "AZURE_DEVOPS_EXT_PAT", "GITLAB_PAT_READ", "DB_PWD", "smtp_pwd", "DBUS_SESSION_BUS_ADDRESS", "KRB5CCNAME", "XDG_RUNTIME_DIR",
  ];
  const harmless = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "LANG", "LC_ALL", "TZ", "PWD", "OLDPWD", "SHLVL",
    "EDITOR", "PAGER", "XKB_DEFAULT_KEYMAP", "KEYBOARD_LAYOUT", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME", "NODE_ENV", "HTTPS_PROXY", "NO_PROXY", "DISPLAY", "SSH_CONNECTION", "HOSTNAME", "MONKEY_PATCH",
    "LD_LIBRARY_PATH", "MANPATH", "PYTHONPATH", "PATCH_LEVEL", "PATTERN", "DBUS_SYSTEM_BUS_ADDRESS",
  ];

  test("credential-bearing names are sensitive", () => {
    expect(sensitive.filter((name) => !isSensitiveEnvName(name))).toEqual([]);
  });

  test("everyday names, including KEYBOARD-, AUTHOR- and PWD-lookalikes, are not", () => {
    expect(harmless.filter(isSensitiveEnvName)).toEqual([]);
  });
});

describe("buildSessionEnv", () => {
  const base = {
    PATH: "/usr/bin:/bin",
    HOME: "/home/ada",
    LANG: "C.UTF-8",
    TERM: "screen",
    GITHUB_TOKEN: "ghp_leak",
    HATCH_SECRET_KEY: "k".repeat(40),
    TMPDIR: "/tmp",
    UNSET: undefined,
  };

  test("strips sensitive names, points the scratch variables at scratch and sets the terminal type", () => {
    expect(buildSessionEnv({ base, scratch: "/data/scratch/hatch-scratch-1" })).toEqual({
      env: {
        PATH: "/usr/bin:/bin",
        HOME: "/home/ada",
        LANG: "C.UTF-8",
        TERM: "xterm-256color",
        COLORTERM: "truecolor",
        TMPDIR: "/data/scratch/hatch-scratch-1",
        TMP: "/data/scratch/hatch-scratch-1",
        TEMP: "/data/scratch/hatch-scratch-1",
        CLAUDE_CODE_TMPDIR: "/data/scratch/hatch-scratch-1",
      },
      dropped: [],
    });
  });

  test("extra adds and overrides ordinary variables, but never puts back a sensitive one", () => {
    const { env, dropped } = buildSessionEnv({
      base,
      scratch: "/s",
      extra: { EDITOR: "vim", LANG: "de_DE.UTF-8", GITHUB_TOKEN: "mine", hatch_secret_key: "x", OPENAI_API_KEY: "sk-1" },
      callerMayType: true,
    });
    expect(env).toMatchObject({ EDITOR: "vim", LANG: "de_DE.UTF-8" });
    expect(Object.keys(env).filter(isSensitiveEnvName)).toEqual([]);
    expect(dropped).toEqual(["GITHUB_TOKEN", "hatch_secret_key", "OPENAI_API_KEY"]);
  });

  test("extra never sets what makes the shell or the loader run code at start, even for a caller who types", () => {
    const startCode = ["PROMPT_COMMAND", "PS0", "PS1", "PS4", "PROMPT", "RPROMPT", "RPS1", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "ZDOTDIR", "HOME", "XDG_CONFIG_HOME", "INPUTRC", "BASH_FUNC_ls%%", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "XDG_DATA_DIRS", "XDG_DATA_HOME", "GCONV_PATH", "LOCPATH", "HISTFILE", "MAILPATH", "BASH_COMPLETION_USER_FILE", "BASH_COMPLETION_USER_DIR"];
    const extra = Object.fromEntries([...startCode, "EDITOR", "PS5", "ENVIRONMENT", "OLDPWD"].map((name) => [name, "x"]));
    const { env, dropped } = buildSessionEnv({ base: {}, scratch: "/s", extra, callerMayType: true });
    expect(dropped).toEqual(startCode);
    expect(env).toMatchObject({ EDITOR: "x", PS5: "x", ENVIRONMENT: "x", OLDPWD: "x" });
  });

  test("a caller who may not type sets only what describes their terminal (TERM, locale, time zone)", () => {
    const described = { TERM: "xterm", COLORTERM: "24bit", TERM_PROGRAM: "hatch", TERM_PROGRAM_VERSION: "1", LANG: "de_DE.UTF-8", LANGUAGE: "de", LC_ALL: "C.UTF-8", LC_TIME: "C", TZ: "UTC" };
    for (const callerMayType of [false, undefined]) {
      const { env, dropped } = buildSessionEnv({ base: { PATH: "/usr/bin" }, scratch: "/s", extra: { ...described, EDITOR: "vim", PATH: "/tmp/evil", HOME: "/tmp" }, callerMayType });
      expect(env).toMatchObject({ ...described, PATH: "/usr/bin" });
      expect(dropped).toEqual(["EDITOR", "PATH", "HOME"]);
    }
  });

  test("extra cannot move the scratch variables, in any spelling", () => {
    const { env, dropped } = buildSessionEnv({ base, scratch: "/s", extra: { TMPDIR: "/tmp", Temp: "/tmp", CLAUDE_CODE_TMPDIR: "/" } });
    expect([env.TMPDIR, env.TMP, env.TEMP, env.CLAUDE_CODE_TMPDIR, env.Temp]).toEqual(["/s", "/s", "/s", "/s", undefined]);
    expect(dropped).toEqual(["TMPDIR", "Temp", "CLAUDE_CODE_TMPDIR"]);
  });

  test("names and values execve cannot carry are dropped", () => {
    const { env, dropped } = buildSessionEnv({ base: {}, scratch: "/s", extra: { "A=B": "1", "": "2", NUL: "a\0b" } });
    expect(Object.keys(env).sort()).toEqual(["CLAUDE_CODE_TMPDIR", "COLORTERM", "TEMP", "TERM", "TMP", "TMPDIR"]);
    expect(dropped).toEqual(["A=B", "", "NUL"]);
  });

  test("term overrides the default, and extra may choose its own terminal type", () => {
    expect(buildSessionEnv({ base: {}, scratch: "/s", term: "xterm" }).env.TERM).toBe("xterm");
    expect(buildSessionEnv({ base: {}, scratch: "/s", extra: { TERM: "vt100" } }).env.TERM).toBe("vt100");
  });
});

describe("a tab's environment, end to end", () => {
  test("a connection URL carrying a password reaches no tab, whatever its variable is called", async () => {
    // Names hosting platforms and frameworks set beside DATABASE_URL (Vercel Postgres, Neon, Prisma, Heroku, Celery, pip).
    const urls = {
      POSTGRES_URL_NON_POOLING: "postgres://app:pg-s3cret@db.internal/app",
      POSTGRES_PRISMA_URL: "postgres://app:pg-s3cret@db.internal/app?pgbouncer=true",
      DATABASE_URL_UNPOOLED: "postgresql://app:neon-s3cret@ep-x.neon.tech/app",
      DIRECT_URL: "postgresql://app:prisma-s3cret@db.internal/app",
      REDIS_TLS_URL: "rediss://:redis-s3cret@redis.internal:6380",
      CELERY_BROKER_URL: "amqp://worker:amqp-s3cret@mq.internal//",
      PIP_INDEX_URL: "https://ci:pypi-s3cret@pypi.internal/simple",
    };
    await using world = await startWorld({}, { baseEnv: { ...process.env, HOME: "/nonexistent", ...urls } });
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    localSource(world, project, "docs", { member: "rwx" });
    expect((await createSession(member.client, { sourceSlug: "docs", id: "e" })).status).toBe(201);
    const shown = await member.client.post(`${TERMINAL}/sessions/e/exec`, { command: "env" });
    expect(shown.status).toBe(200);
    const leaked = Object.keys(urls).filter((name) => (shown.body.output as string).includes(`${name}=`));
    expect(leaked).toEqual([]);
  });
});
