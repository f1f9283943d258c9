/**
 * Just enough of the POSIX shell grammar to screen a typed line: simple
 * commands split on `;`, `&`, `|`, `(`, `)`, their words with quotes and
 * escapes removed, redirections, expanded variable names and the text of
 * command substitutions. It never evaluates anything; what it cannot see
 * (aliases, functions, variables' values) stays unseen, as befits a
 * best-effort filter.
 */

/** One command between operators: `sudo rm -rf / > log` in `a; sudo rm -rf / > log`. */
export interface SimpleCommand {
  /** Words with quoting removed; `$NAME` and `${...}` are kept verbatim. */
  words: string[];
  /** `>`/`>>`/`<`/`<<<`/`&>`... and their target word; a leading fd number is dropped. */
  redirects: { op: string; target: string }[];
  /** Names of parameters expanded outside single quotes (`$TOKEN`, `${!TOKEN}`). */
  expansions: string[];
}

/** A parsed line: its simple commands and the source text of every `$(...)`, `` `...` ``, `<(...)`. */
export interface ParsedLine {
  commands: SimpleCommand[];
  substitutions: string[];
  /** The line ends in `|`, `|&`, `&&` or `||` (a comment after it aside): the shell reads the next line as the rest of the list. */
  endsInOperator: boolean;
  /** The line ends inside a quote, `$'…'`, `` `…` ``, `$(…)` or `${…}`: the shell reads the next line as more of it. */
  endsOpen: boolean;
}

/**
 * Split one line into simple commands.
 *
 * @example
 * parseShellLine(`FOO=1 sudo "rm" -rf / 2>/dev/null; echo $HOME`).commands.map((c) => c.words)
 * // => [["FOO=1", "sudo", "rm", "-rf", "/"], ["echo", "$HOME"]]
 */
export function parseShellLine(line: string): ParsedLine {
  return new Scanner(line).run();
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;
/** The escapes bash decodes inside `$'...'`, read just past the backslash. */
const ANSI_C_ESCAPE = /^(?:[abeEfnrtv\\'"?]|[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|c.)/s;
const SIMPLE_ESCAPES: Record<string, string> = { a: "\x07", b: "\b", e: "\x1b", E: "\x1b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v" };

/** One `$'...'` escape (without its backslash) as the character bash puts in the word. */
function decodeAnsiC(escape: string): string {
  const head = escape[0]!;
  if (head in SIMPLE_ESCAPES) return SIMPLE_ESCAPES[head]!;
  if (/[0-7]/.test(head)) return String.fromCharCode(parseInt(escape, 8) & 0xff);
  if (head === "x") return String.fromCharCode(parseInt(escape.slice(1), 16));
  if (head === "u" || head === "U") {
    const code = parseInt(escape.slice(1), 16);
    return code <= 0x10ffff ? String.fromCodePoint(code) : "";
  }
  if (head === "c") return String.fromCharCode(escape.charCodeAt(1) & 0x1f);
  return head;
}
/** A brace list of plain characters with at least one comma, at the start of the text. */
const BRACE_LIST = /^\{([^\s{}'"\\$`;&|()<>]*,[^\s{}'"\\$`;&|()<>]*)\}/;
/** Brace lists are looked for within this many characters; real ones are short. */
const MAX_BRACE_LIST = 256;
/** A word's brace lists expand to at most this many words; the rest are not screened. */
const MAX_BRACE_WORDS = 64;

/** The words bash makes of `text` with `braces` put back in, in bash's order: `{a,b}{c,d}` is ac ad bc bd. */
function expandBraces(text: string, braces: { at: number; items: string[] }[]): string[] {
  if (braces.length === 0) return [text];
  let words = [""];
  let from = 0;
  for (const { at, items } of braces) {
    const literal = text.slice(from, at);
    words = words.flatMap((word) => items.map((item) => word + literal + item)).slice(0, MAX_BRACE_WORDS);
    from = at;
  }
  return words.map((word) => word + text.slice(from));
}

/** Operators that leave a command list unfinished at the end of a line. */
const CONTINUING_OPERATORS = new Set(["|", "|&", "&&", "||"]);

class Scanner {
  readonly commands: SimpleCommand[] = [];
  readonly substitutions: string[] = [];
  #command: SimpleCommand = { words: [], redirects: [], expansions: [] };
  #word: string | null = null;
  #redirect: string | null = null;
  #i = 0;
  /** Control-operator characters since the last word, quote or redirection: `&&` at the end leaves "&&". */
  #operator = "";
  /** A quote or substitution ran off the end of the line. */
  #open = false;
  /** Inside `"…"`, where an expansion is never split into words. */
  #inDoubleQuotes = false;
  /** Unquoted brace lists (`{rm,-rf,/}`) in the current word: where they go in its text, and their items. */
  #braces: { at: number; items: string[] }[] = [];

  constructor(readonly line: string) {}

  run(): ParsedLine {
    const line = this.line;
    while (this.#i < line.length) {
      const c = line[this.#i]!;
      const next = line[this.#i + 1];
      if (c === "#" && this.#word === null) {
        // A comment runs to the end of its line; a continued line joined on "\n" goes on after it.
        const newline = line.indexOf("\n", this.#i);
        if (newline === -1) break;
        this.#i = newline;
        continue;
      }
      if (c === "|" || (c === "&" && next !== ">")) this.#operator += c;
      else if (!/\s/.test(c)) this.#operator = "";
      if (c === "'") this.#singleQuoted();
      else if (c === '"') this.#doubleQuoted();
      else if (c === "\\") this.#escaped();
      else if (c === "$") this.#dollar();
      else if (c === "`") this.#backtick();
      else if ((c === "<" || c === ">") && next === "(") this.#substitution(this.#i + 2);
      else if (c === "<" || c === ">" || (c === "&" && next === ">")) this.#redirection();
      else this.#plain(c);
    }
    this.#endCommand();
    const endsInOperator = CONTINUING_OPERATORS.has(this.#operator);
    return { commands: this.commands, substitutions: this.substitutions, endsInOperator, endsOpen: this.#open };
  }

  #plain(c: string): void {
    if (c === "{" && this.#braceList()) return;
    // An unquoted line break ends a command as `;` does (an exec's script, a continued line); other space ends a word.
    if (c === "\n") this.#endCommand();
    else if (/\s/.test(c)) this.#endWord();
    else if (";&|()".includes(c)) this.#endCommand();
    else this.#append(c);
    this.#i++;
  }

  /**
   * `{a,b,c}` of plain characters: bash turns the word into one word per item,
   * so `{rm,-rf,/}` is `rm -rf /`. Lists with quotes, expansions or nested
   * braces inside are left as text.
   */
  #braceList(): boolean {
    const match = BRACE_LIST.exec(this.line.slice(this.#i, this.#i + MAX_BRACE_LIST));
    if (!match) return false;
    this.#append("");
    this.#braces.push({ at: this.#word!.length, items: match[1]!.split(",") });
    this.#i += match[0].length;
    return true;
  }

  #escaped(): void {
    // A backslash before a line break joins the lines: the shell removes both, inside a word too.
    if (this.line[this.#i + 1] !== "\n") this.#append(this.line[this.#i + 1] ?? "");
    this.#i += 2;
  }

  #append(text: string): void {
    this.#word = (this.#word ?? "") + text;
  }

  #endWord(): void {
    if (this.#word === null) return;
    for (const word of expandBraces(this.#word, this.#braces)) {
      if (this.#redirect !== null) this.#command.redirects.push({ op: this.#redirect, target: word });
      else this.#command.words.push(word);
    }
    this.#word = null;
    this.#redirect = null;
    this.#braces = [];
  }

  #endCommand(): void {
    this.#endWord();
    const command = this.#command;
    if (command.words.length || command.redirects.length || command.expansions.length) this.commands.push(command);
    this.#command = { words: [], redirects: [], expansions: [] };
    this.#redirect = null;
  }

  #singleQuoted(): void {
    const end = this.line.indexOf("'", this.#i + 1);
    if (end === -1) this.#open = true;
    const stop = end === -1 ? this.line.length : end;
    this.#append(this.line.slice(this.#i + 1, stop));
    this.#i = stop + 1;
  }

  #doubleQuoted(): void {
    const line = this.line;
    this.#append("");
    this.#i++;
    this.#inDoubleQuotes = true;
    while (this.#i < line.length && line[this.#i] !== '"') {
      const c = line[this.#i]!;
      if (c === "\\" && '$`"\\\n'.includes(line[this.#i + 1] ?? "")) this.#escaped();
      else if (c === "$") this.#dollar();
      else if (c === "`") this.#backtick();
      else {
        this.#append(c);
        this.#i++;
      }
    }
    if (this.#i >= line.length) this.#open = true;
    this.#inDoubleQuotes = false;
    this.#i++;
  }

  #dollar(): void {
    const line = this.line;
    const next = line[this.#i + 1];
    if (next === "(") return this.#substitution(this.#i + 2);
    if (next === "'") return this.#ansiCQuoted();
    if (next === '"') {
      // $"..." (locale translation) reads as "..." wherever no catalogue translates it.
      this.#i++;
      return this.#doubleQuoted();
    }
    if (next === "{") {
      const end = line.indexOf("}", this.#i + 2);
      if (end === -1) this.#open = true;
      const stop = end === -1 ? line.length : end + 1;
      const inner = line.slice(this.#i + 2, stop - 1).replace(/^[!#]/, "");
      const name = NAME.exec(inner)?.[0];
      if (name) this.#command.expansions.push(name);
      this.#expansion(name, line.slice(this.#i, stop));
      this.#i = stop;
      return;
    }
    const name = NAME.exec(line.slice(this.#i + 1))?.[0];
    if (name) this.#command.expansions.push(name);
    this.#expansion(name, "$" + (name ?? ""));
    this.#i += 1 + (name?.length ?? 0);
  }

  /**
   * A parameter expansion kept as its text, except an unquoted `$IFS` (or
   * `${IFS…}`): its value is the blanks the shell splits words on, so
   * `rm${IFS}-rf${IFS}/` is three words.
   */
  #expansion(name: string | undefined, text: string): void {
    if (name === "IFS" && !this.#inDoubleQuotes) this.#endWord();
    else this.#append(text);
  }

  /** `$'...'`: escapes decoded as bash does, so `$'\x2f'` and `$'\057'` are the `/` the shell will see. */
  #ansiCQuoted(): void {
    const line = this.line;
    let i = this.#i + 2;
    let text = "";
    // bash ends the quoted text at a decoded NUL: `$'rm\0x'` runs `rm`.
    let cut = false;
    while (i < line.length && line[i] !== "'") {
      if (line[i] !== "\\") {
        if (!cut) text += line[i];
        i++;
        continue;
      }
      const escape = ANSI_C_ESCAPE.exec(line.slice(i + 1, i + 11));
      // An escape bash does not know keeps its backslash: `$'\q'` is `\q`.
      const decoded = escape ? decodeAnsiC(escape[0]) : "\\" + (line[i + 1] ?? "");
      if (decoded === "\0") cut = true;
      if (!cut) text += decoded;
      i += 1 + (escape ? escape[0].length : 1);
    }
    if (i >= line.length) this.#open = true;
    this.#append(text);
    this.#i = i + 1;
  }

  #backtick(): void {
    let end = this.#i + 1;
    while (end < this.line.length && this.line[end] !== "`") end += this.line[end] === "\\" ? 2 : 1;
    if (end >= this.line.length) this.#open = true;
    this.substitutions.push(this.line.slice(this.#i + 1, end));
    this.#append("");
    this.#i = end + 1;
  }

  /** `start` is just past the opening parenthesis; nested parentheses and quotes are skipped over. */
  #substitution(start: number): void {
    const line = this.line;
    let depth = 1;
    let i = start;
    for (; i < line.length && depth > 0; i++) {
      const c = line[i];
      if (c === "\\") i++;
      else if (c === "'" || c === '"') {
        const close = line.indexOf(c, i + 1);
        i = close === -1 ? line.length : close;
      } else if (c === "(") depth++;
      else if (c === ")") depth--;
    }
    if (depth > 0) this.#open = true;
    this.substitutions.push(line.slice(start, depth === 0 ? i - 1 : i));
    this.#append("");
    this.#i = i;
  }

  #redirection(): void {
    const line = this.line;
    // "2>" and "10>&1": the digits name a file descriptor, not a word.
    if (this.#word !== null && /^\d+$/.test(this.#word)) this.#word = null;
    else this.#endWord();
    let op = "";
    while (this.#i < line.length && "<>&|-".includes(line[this.#i]!) && op.length < 3) op += line[this.#i++];
    this.#redirect = op;
  }
}

/**
 * Programs that run their arguments as another command, with the options of
 * theirs that take a value. `sudo -u root rm -rf /` is `rm -rf /`.
 */
const WRAPPERS: Record<string, string[]> = {
  sudo: ["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R"],
  doas: ["-u", "-C"],
  env: ["-u", "-C", "-S"],
  nice: ["-n"],
  ionice: ["-c", "-n", "-p"],
  timeout: ["-s", "-k"],
  stdbuf: ["-i", "-o", "-e"],
  xargs: ["-I", "-L", "-n", "-P", "-d", "-E", "-s", "-a"],
  exec: ["-a"],
  time: ["-f", "-o"],
  nohup: [],
  command: [],
  builtin: [],
  busybox: [],
  chronic: [],
  unbuffer: [],
  // Tracing, scheduling, namespace and privilege tools that exec the rest of their argv.
  strace: ["-a", "-b", "-e", "-E", "-I", "-o", "-O", "-p", "-P", "-s", "-S", "-u", "-U", "-X"],
  ltrace: ["-a", "-A", "-D", "-e", "-F", "-l", "-n", "-o", "-p", "-s", "-u", "-x"],
  chroot: ["--userspec", "--groups"],
  nsenter: ["-t", "--target", "-S", "--setuid", "-G", "--setgid"],
  unshare: ["-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd", "--map-user", "--map-group", "--map-users", "--map-groups", "--propagation", "--setgroups"],
  taskset: [],
  chrt: ["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"],
  setsid: [],
  setarch: [],
  linux32: [],
  linux64: [],
  prlimit: ["-p", "--pid"],
  "systemd-run": ["-p", "--property", "-u", "--unit", "-E", "--setenv", "-H", "--host", "-M", "--machine", "--uid", "--gid", "--nice", "--working-directory", "--slice", "--description", "--service-type"],
  pkexec: ["--user"],
  setpriv: ["--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile", "--inh-caps", "--ambient-caps", "--bounding-set"],
  cgexec: ["-g"],
  numactl: ["-C", "--cpunodebind", "-N", "-m", "--membind", "-p", "--preferred", "-i", "--interleave", "-P", "--physcpubind"],
  faketime: ["-f"],
  fakeroot: ["-l", "--lib", "-s", "-i", "--faked"],
  firejail: [],
  eatmydata: [],
  nocache: [],
  torsocks: ["-u", "-p", "-a", "-P"],
  proxychains: ["-f"],
  proxychains4: ["-f"],
  valgrind: [],
  // Shell keywords that may precede a command word.
  "!": [],
  "{": [],
  if: [],
  then: [],
  else: [],
  elif: [],
  do: [],
  while: [],
  until: [],
};

/** Wrappers whose first operand is a value, not the command (`timeout 5 rm ...`, `chroot /mnt rm ...`). */
const FIRST_OPERAND_IS_VALUE = new Set(["timeout", "chroot", "taskset", "chrt", "setarch", "faketime"]);

/** Safety bound: `sudo sudo sudo ...` cannot make unwrapping loop for long. */
const MAX_WRAPPERS = 16;

/**
 * The argv that actually runs: leading `NAME=value` assignments and wrapper
 * programs removed, the program reduced to its base name (`/bin/rm` -> `rm`).
 *
 * @example
 * commandArgv(["FOO=1", "sudo", "-u", "root", "/usr/bin/rm", "-rf", "/"]) // => ["rm", "-rf", "/"]
 */
export function commandArgv(words: string[]): string[] {
  // An index rather than repeated slicing: a pasted line may hold thousands of words.
  let at = 0;
  for (let round = 0; round < MAX_WRAPPERS; round++) {
    while (at < words.length && ASSIGNMENT.test(words[at]!)) at++;
    if (at >= words.length) return [];
    const program = baseName(words[at]!);
    const valued = WRAPPERS[program];
    if (!valued) return [program, ...words.slice(at + 1)];
    at = pastOptions(words, at + 1, valued);
    // `setarch x86_64 -R cmd`: options may follow the value operand too.
    if (FIRST_OPERAND_IS_VALUE.has(program)) at = pastOptions(words, at + 1, valued);
  }
  return [];
}

/** Index of the first word at or after `at` that is not an option (those in `valued` take the next word) or the `--` ending them. */
export function pastOptions(words: string[], at: number, valued: string[]): number {
  while (at < words.length && words[at]!.startsWith("-") && words[at]!.length > 1) {
    const option = words[at]!;
    at += valued.includes(option) ? 2 : 1;
    if (option === "--") break;
  }
  return at;
}

/** `NAME=value` or `NAME+=value` before a command. */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

/** `/usr/bin/rm` -> `rm`. */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}
