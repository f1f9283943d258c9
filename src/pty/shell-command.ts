/**
 * The variable that carries a command's text to its shell. Every host user, and
 * every Landlock-only sandbox, can read a process's command line; its
 * environment only with ptrace rights, which Landlock scopes to the sandbox.
 */
export const COMMAND_TEXT_VARIABLE = "HATCH_COMMAND";

/**
 * The argv and extra environment that run `command` as `shell -c command`
 * would, but with the text (often holding a token: `curl -H "Authorization: …"`)
 * off the command line. `eval "$NAME"` means the same in sh, bash, zsh, ksh and
 * fish; the variable stays in the command's environment, where only it and its
 * children see it.
 *
 * @example
 * shellCommand("/bin/bash", "echo hi")
 * // { argv: ["/bin/bash", "-c", 'eval "$HATCH_COMMAND"'], env: { HATCH_COMMAND: "echo hi" } }
 */
export function shellCommand(shell: string, command: string): { argv: string[]; env: Record<string, string> } {
  return { argv: [shell, "-c", `eval "$${COMMAND_TEXT_VARIABLE}"`], env: { [COMMAND_TEXT_VARIABLE]: command } };
}
