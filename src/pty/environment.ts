/**
 * The environment a PTY starts with: the server's own, minus anything that
 * names a credential, plus the caller's additions, plus the variables the
 * server owns (scratch directory, terminal type).
 */

/**
 * Variable names that are never passed into a terminal. Matched against the
 * name upper-cased, because Windows names are case-insensitive and npm reads
 * lower-case ones (`npm_config__authtoken`).
 *
 * Word-ish markers (KEY, AUTH, PASS) match only as a whole `_`-separated
 * segment, so `KEYBOARD`, `XKB_DEFAULT_KEYMAP`, `GIT_AUTHOR_NAME`, `PWD` and
 * `OLDPWD` survive. Markers that are never innocent (TOKEN, SECRET, PASSWORD,
 * CREDENTIAL) match anywhere in the name; the price is an occasional harmless
 * casualty such as `TOKENIZERS_PARALLELISM`, which is the right side to err on.
 * Proxy variables (`HTTPS_PROXY`) are kept: without them a corporate network
 * is unreachable, and a credential inside one is the operator's choice.
 */
export const SENSITIVE_ENV_PATTERNS: readonly RegExp[] = [
  // Generic secret markers anywhere in the name.
  /TOKEN/,
  /SECRET/,
  /PASSWORD|PASSWD|PASSPHRASE/,
  /CREDENTIAL/,
  // Glued spellings (APIKEY); FOO_KEY is caught by the segment rule below.
  /API_?KEY|ACCESS_?KEY|PRIVATE_?KEY/,
  /WEBHOOK/,
  /CONNECTION_?STRING/,
  // Word-like markers, only as a whole segment: FOO_KEY, KEY_ID, SMTP_PASS, BASIC_AUTH, NPM_CONFIG__AUTH.
  // PAT is a personal access token (GITHUB_PAT, AZURE_DEVOPS_EXT_PAT), never PATH.
  /(^|_)(KEYS?|PASS|AUTH|OAUTH\d*|AUTHN|AUTHZ|AUTHORIZATION|COOKIE|SALT|JWT|DSN|CREDS|PAT)(_|$)/,
  // A password spelled PWD after a prefix (DB_PWD, MYSQL_PWD); PWD and OLDPWD themselves are the working directory.
  /._PWD$/,
  // Connection URLs that embed a password.
  /(^|_)(DATABASE|DB|REDIS|MONGO(DB)?|POSTGRES(QL)?|PG|MYSQL|MARIADB|AMQP|RABBITMQ|CLICKHOUSE)_(URL|URI)$/,
  /^(PGPASSFILE|PGSERVICEFILE)$/,
  // Cloud and platform credentials, whole families.
  /^(AWS|AZURE|GCP|GCLOUD|CLOUDSDK|DIGITALOCEAN|LINODE|VULTR|HCLOUD|SCW|OCI|ALIBABA_CLOUD|ALICLOUD|IBMCLOUD|CLOUDFLARE|VAULT|DOPPLER|OP)_/,
  /^GOOGLE_APPLICATION_CREDENTIALS$/,
  /^KUBECONFIG$/,
  // Model providers: the platform's own keys must not reach a user's shell.
  /^(OPENAI|ANTHROPIC)_/,
  // Capabilities rather than secrets: an agent socket signs as the operator, IPC handles answer credential prompts.
  // The session bus reaches the desktop keyring (Secret Service); KRB5CCNAME names a Kerberos ticket cache.
  // Without DBUS_SESSION_BUS_ADDRESS, sd-bus and GDBus find the session bus (and systemd's user manager) in XDG_RUNTIME_DIR.
  /^(SSH_AUTH_SOCK|GPG_AGENT_INFO|XAUTHORITY|DBUS_SESSION_BUS_ADDRESS|KRB5CCNAME|XDG_RUNTIME_DIR)$/,
  /ASKPASS/,
  /^VSCODE_GIT_/,
  // Git config injected through the environment may carry an http.extraHeader with a token.
  /^GIT_CONFIG_(COUNT|KEY_|VALUE_|PARAMETERS)/,
  // The server's own configuration, HATCH_SECRET_KEY above all.
  /^HATCH_/,
];

/**
 * A value that is a URL with a password in it (`postgres://app:s3cret@db/app`,
 * `rediss://:s3cret@cache`), whatever its variable is called: platforms set
 * many beside DATABASE_URL (POSTGRES_URL_NON_POOLING, DIRECT_URL,
 * CELERY_BROKER_URL, PIP_INDEX_URL, a proxy's credentials).
 */
const URL_WITH_PASSWORD = /^\s*[a-z][a-z0-9+.-]*:\/\/[^/\s@:]*:[^/\s@]+@/i;

/**
 * True when a variable of this name must not reach a terminal.
 *
 * @example
 * isSensitiveEnvName("GITHUB_TOKEN") // true
 * isSensitiveEnvName("KEYBOARD_LAYOUT") // false
 */
export function isSensitiveEnvName(name: string): boolean {
  const upper = name.toUpperCase();
  return SENSITIVE_ENV_PATTERNS.some((pattern) => pattern.test(upper));
}

/**
 * Names that make the shell (or the loader, under it) run code taken from the
 * environment as the session starts, before a line is typed, so past input
 * screening: bash's PROMPT_COMMAND and prompts (PS0-PS4 expand `$(…)`), the
 * startup files BASH_ENV and ENV, exported functions, SHELLOPTS and BASHOPTS
 * (xtrace prints PS4), zsh's ZDOTDIR and prompts, HOME (bash reads ~/.bashrc
 * from it, as zsh reads ZDOTDIR), XDG_CONFIG_HOME (fish's config), INPUTRC
 * (readline macros that press Enter), XDG_DATA_DIRS and XDG_DATA_HOME
 * (fish sources vendor_conf.d from them), LD_PRELOAD and the rest of the
 * loader's variables, and GCONV_PATH and LOCPATH (modules and locale files
 * glibc loads into any program). HISTFILE too: the shell writes typed lines to
 * it, so it could turn them into a startup file or overwrite a file of the
 * data directory. And MAILPATH, whose messages bash expands (`$(…)` included)
 * at a prompt once a named file changes, and bash-completion's
 * BASH_COMPLETION_USER_FILE and BASH_COMPLETION_USER_DIR, scripts it sources
 * at start or at a Tab. A create body may never set them.
 */
const START_CODE_ENV =
  /^(PROMPT_COMMAND|PS[0-4]|PROMPT[2-4]?|RPROMPT2?|RPS[12]|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|ZDOTDIR|HOME|XDG_CONFIG_HOME|XDG_DATA_DIRS|XDG_DATA_HOME|INPUTRC|BASH_FUNC_.+|LD_.+|GCONV_PATH|LOCPATH|HISTFILE|MAILPATH|BASH_COMPLETION_USER_(FILE|DIR))$/;

/**
 * What a caller who may not type (no core.execute) may still set: how their
 * own terminal looks and reads. Anything else could steer the shell they
 * cannot drive.
 */
const TERMINAL_DESCRIPTION_ENV = /^(TERM|COLORTERM|TERM_PROGRAM|TERM_PROGRAM_VERSION|LANG|LANGUAGE|LC_[A-Z]+|TZ)$/;

/** Variables pointing at the session's private scratch directory; the caller cannot move them. */
export const SCRATCH_ENV_NAMES = ["TMPDIR", "TMP", "TEMP", "CLAUDE_CODE_TMPDIR"] as const;

/** The emulator on both ends (xterm.js in the browser, @xterm/headless in the mirror). */
export const DEFAULT_TERM = "xterm-256color";
/** Both xterm.js and the headless mirror render 24-bit colour. */
export const DEFAULT_COLORTERM = "truecolor";

/** What `buildSessionEnv` needs. */
export interface SessionEnvOptions {
  /** The server's environment, usually what `src/config.ts` was given. */
  base: Record<string, string | undefined>;
  /** The create body's `env`: may add variables, never a sensitive or server-owned one, nor one that runs code at start. */
  extra?: Record<string, string>;
  /** Whether the caller may type in the session (core.execute); without it `extra` may only describe their terminal. */
  callerMayType?: boolean;
  /** Absolute path of the session's scratch directory. */
  scratch: string;
  /** Overrides `DEFAULT_TERM`. */
  term?: string;
}

/** The environment to spawn with, and the names from `extra` that were refused. */
export interface SessionEnv {
  env: Record<string, string>;
  /** Names only, never values: safe to log or return to the caller. */
  dropped: string[];
}

/**
 * Build a PTY's environment. Sensitive names, and URLs carrying a password
 * whatever their name, are stripped from `base`; sensitive names are refused
 * from `extra`, so a create body cannot put back what was stripped;
 * `extra` is refused names that run code at start, and for a caller who may
 * not type, all but the names that describe their terminal.
 * The scratch variables always point at `scratch`. `TERM` and `COLORTERM`
 * default to what the emulators speak; `extra` may change them, since they
 * only describe the user's own terminal.
 *
 * @example
 * const { env, dropped } = buildSessionEnv({ base: serverEnv, extra: body.env, scratch: dir.path });
 */
export function buildSessionEnv(options: SessionEnvOptions): SessionEnv {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.base)) {
    if (value !== undefined && isValidName(name) && !isSensitiveEnvName(name) && !URL_WITH_PASSWORD.test(value)) env[name] = value;
  }
  env.TERM = options.term ?? DEFAULT_TERM;
  env.COLORTERM = DEFAULT_COLORTERM;

  const dropped: string[] = [];
  for (const [name, value] of Object.entries(options.extra ?? {})) {
    const refused =
      !isValidName(name) ||
      typeof value !== "string" ||
      value.includes("\0") ||
      isSensitiveEnvName(name) ||
      isScratchName(name) ||
      START_CODE_ENV.test(name) ||
      (options.callerMayType !== true && !TERMINAL_DESCRIPTION_ENV.test(name));
    if (refused) dropped.push(name);
    else env[name] = value;
  }

  for (const name of SCRATCH_ENV_NAMES) env[name] = options.scratch;
  return { env, dropped };
}

/** A name execve can carry: non-empty, no `=`, no NUL. */
function isValidName(name: string): boolean {
  return name.length > 0 && !name.includes("=") && !name.includes("\0");
}

/** Case-insensitive, because on Windows `Tmp` and `TMP` are the same variable. */
function isScratchName(name: string): boolean {
  const upper = name.toUpperCase();
  return SCRATCH_ENV_NAMES.some((scratch) => scratch === upper);
}
