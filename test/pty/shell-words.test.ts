import { describe, expect, test } from "bun:test";
import { commandArgv, parseShellLine } from "../../src/pty/shell-words.ts";

describe("parseShellLine", () => {
  test("splits simple commands on operators and removes quoting", () => {
    const { commands } = parseShellLine(`FOO=1 sudo "rm" -rf '/' 2>/dev/null; echo a\\ b && ls|wc -l & (cd x)`);
    expect(commands.map((c) => c.words)).toEqual([["FOO=1", "sudo", "rm", "-rf", "/"], ["echo", "a b"], ["ls"], ["wc", "-l"], ["cd", "x"]]);
    expect(commands[0]!.redirects).toEqual([{ op: ">", target: "/dev/null" }]);
  });

  test("records expansions outside single quotes only, and keeps them verbatim in words", () => {
    const { commands } = parseShellLine(`echo $TOKEN "\${!SECRET}" '$NOT_ME' \${HOME}/x`);
    expect(commands[0]).toEqual({ words: ["echo", "$TOKEN", "${!SECRET}", "$NOT_ME", "${HOME}/x"], redirects: [], expansions: ["TOKEN", "SECRET", "HOME"] });
  });

  test("collects command and process substitutions for a separate look", () => {
    const { commands, substitutions } = parseShellLine("x=$(cat a | (grep b)) `id` diff <(ls /) \"$(whoami)\"");
    expect(substitutions).toEqual(["cat a | (grep b)", "id", "ls /", "whoami"]);
    expect(commands.map((c) => c.words)).toEqual([["x=", "", "diff", "", ""]]);
  });

  test("a comment ends the line, a # inside a word does not", () => {
    expect(parseShellLine("ls # rm -rf /").commands.map((c) => c.words)).toEqual([["ls"]]);
    expect(parseShellLine("root@box:/# ls").commands.map((c) => c.words)).toEqual([["root@box:/#", "ls"]]);
  });

  test("a line ending in a control operator that needs more is marked, whatever follows it in a comment", () => {
    const ends = (line: string) => parseShellLine(line).endsInOperator;
    expect(["env |", "env|", "a |&", "make &&  ", "a || # or else", "x=$(id) |"].map(ends)).toEqual([true, true, true, true, true, true]);
    expect(["env", "sleep 1 &", "echo '|'", "echo \\|", "ls >|", "a | b", "# x |", "echo \"&&\""].map(ends)).toEqual([false, false, false, false, false, false, false, false]);
  });

  test("$'...' is decoded as bash decodes it, and $\"...\" reads as \"...\"", () => {
    const words = (line: string) => parseShellLine(line).commands[0]!.words;
    expect(words(String.raw`rm -rf $'\057' $'\x2f' $'\u002F' $'\U0000002f' $'a\'b' $'\t\e\cA' $'\q\x' $"r""m"`)).toEqual([
      "rm", "-rf", "/", "/", "/", "/", "a'b", "\t\x1b\x01", "\\q\\x", "rm",
    ]);
    // A decoded NUL ends the quoted text, as it ends bash's C string.
    expect(words(String.raw`r$'m\0junk' -rf x`)).toEqual(["rm", "-rf", "x"]);
    expect(parseShellLine(`$"$TOKEN"`).commands[0]!.expansions).toEqual(["TOKEN"]);
  });

  test("a line ending inside a quote or substitution is marked open; a quote in a comment or a closed one is not", () => {
    const open = (line: string) => parseShellLine(line).endsOpen;
    expect(['echo "', "echo 'a", "echo $'a", 'echo "a\\', "x=$(ls", "x=`ls", "echo ${HOME", 'echo "$(ls"'].map(open)).toEqual([true, true, true, true, true, true, true, true]);
    expect(["echo \"a\"", "echo 'a'", "echo $'a\\''", "x=$(ls)", "echo ok # it's", "echo \\'", "echo ${HOME}"].map(open)).toEqual([false, false, false, false, false, false, false]);
  });

  test("an unquoted $IFS splits words as the shell does; a quoted one does not", () => {
    const words = (line: string) => parseShellLine(line).commands[0]!.words;
    expect(words("rm${IFS}-rf${IFS}/")).toEqual(["rm", "-rf", "/"]);
    expect(words("rm$IFS-rf$IFS/")).toEqual(["rm", "-rf", "/"]);
    expect(words("cat${IFS:0:1}/etc/shadow")).toEqual(["cat", "/etc/shadow"]);
    expect(words('echo "a${IFS}b"')).toEqual(["echo", "a${IFS}b"]);
  });

  test("an unquoted brace list becomes one word per item, in bash's order; braces without a comma, quoted or escaped stay text", () => {
    const words = (line: string) => parseShellLine(line).commands[0]!.words;
    expect(words("{rm,-rf,/}")).toEqual(["rm", "-rf", "/"]);
    expect(words("cp a.{ts,js} /x")).toEqual(["cp", "a.ts", "a.js", "/x"]);
    expect(words("echo {a,b}{c,d}")).toEqual(["echo", "ac", "ad", "bc", "bd"]);
    expect(words("echo x{,y}")).toEqual(["echo", "x", "xy"]);
    expect(words("find . -exec rm {} +")).toEqual(["find", ".", "-exec", "rm", "{}", "+"]);
    expect(words(`echo "{a,b}" '{a,b}' \\{a,b} @{u}`)).toEqual(["echo", "{a,b}", "{a,b}", "{a,b}", "@{u}"]);
  });

  test("here-strings, fd duplications and &> are redirections", () => {
    const { commands } = parseShellLine("cat <<< $X 2>&1 &>log");
    expect(commands[0]!.redirects).toEqual([
      { op: "<<<", target: "$X" },
      { op: ">&", target: "1" },
      { op: "&>", target: "log" },
    ]);
  });
});

describe("commandArgv", () => {
  test("strips assignments and wrappers with their options down to the program that runs", () => {
    expect(commandArgv(["FOO=1", "sudo", "-u", "root", "--", "env", "-i", "BAR=2", "nice", "-n", "5", "/usr/bin/rm", "-rf", "/"])).toEqual(["rm", "-rf", "/"]);
    expect(commandArgv(["timeout", "-s", "KILL", "5", "reboot"])).toEqual(["reboot"]);
    expect(commandArgv(["{", "shutdown", "now"])).toEqual(["shutdown", "now"]);
  });

  test("tracing, scheduling, namespace and privilege tools are wrappers too, their value operands skipped", () => {
    const rmRoot = ["rm", "-rf", "/"];
    const lines = [
      ["strace", "-f", "-o", "/tmp/t", "-e", "trace=all"],
      ["ltrace", "-s", "80"],
      ["chroot", "--userspec", "0:0", "/mnt"],
      ["nsenter", "-t", "1", "-m", "-u", "-n", "-p"],
      ["unshare", "-m", "-R", "/mnt", "--"],
      ["taskset", "-c", "0"],
      ["chrt", "-f", "99"],
      ["setsid", "-f"],
      ["systemd-run", "-p", "Nice=5", "--unit", "x"],
      ["pkexec", "--user", "root"],
      ["setpriv", "--reuid", "0", "--init-groups"],
      ["cgexec", "-g", "cpu:/"],
      ["numactl", "-C", "0"],
      ["faketime", "2020-01-01"],
      ["fakeroot"],
      ["setarch", "x86_64", "-R"],
    ];
    expect(lines.map((wrapper) => commandArgv([...wrapper, ...rmRoot]))).toEqual(lines.map(() => rmRoot));
  });

  test("a wrapper with nothing to run leaves nothing", () => {
    expect([commandArgv(["env"]), commandArgv(["A=1"]), commandArgv([])]).toEqual([[], [], []]);
  });
});
