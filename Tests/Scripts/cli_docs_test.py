#!/usr/bin/env python3
"""`latchkey`'s help, man pages and shell completions, as a user meets them: the real binary's
`generate` output read by man, bash, zsh and fish, and its help on the command line.

Usage: cli_docs_test.py LATCHKEY_BINARY. Prints one line per check and
`cli docs tests: N passed, N failed`; exits 1 on a failure."""
import os
import subprocess
import sys
import tempfile

BINARY = os.path.abspath(sys.argv[1])
RESULTS = []


def check(name, ok, detail=""):
    RESULTS.append(bool(ok))
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))


def run(*args, env=None, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=60, **kwargs)


def bash_complete(script, words):
    """COMPREPLY of the bash completion for `words` (the last one is the word being completed)."""
    line = " ".join(f"'{w}'" for w in words)
    shell = f'source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _latchkey; printf "%s\\n" "${{COMPREPLY[@]}}"'
    return run("bash", "-c", shell).stdout.split()


with tempfile.TemporaryDirectory() as work:
    made = run(BINARY, "generate", "--man", f"{work}/man", "--bash-completion", f"{work}/latchkey.bash",
               "--zsh-completion", f"{work}/_latchkey", "--fish-completion", f"{work}/latchkey.fish")
    check("generate writes everything and says so", made.returncode == 0 and "man pages" in made.stderr, made.stderr)
    pages = sorted(os.listdir(f"{work}/man"))
    check("a page for latchkey and for each command", "latchkey.1" in pages and "latchkey-serve.1" in pages
          and "latchkey-credentials.1" in pages and len(pages) > 20, pages)
    for page in pages:
        shown = run("man", "--warnings", "-E", "UTF-8", "-l", f"{work}/man/{page}", env={"MANWIDTH": "80", "LC_ALL": "C.UTF-8"})
        check(f"man renders {page} without a warning", shown.returncode == 0 and not shown.stderr.strip()
              and "latchkey" in shown.stdout, shown.stderr[:300])
    main_page = run("man", "-l", f"{work}/man/latchkey.1", env={"MANWIDTH": "80"}).stdout
    check("latchkey(1) lists the commands' pages", "latchkey-serve(1)" in main_page and "latchkey-pin(1)" in main_page)

    script = f"{work}/latchkey.bash"
    check("bash: a command from its first letters", bash_complete(script, ["latchkey", "ser"]) == ["serve"],
          bash_complete(script, ["latchkey", "ser"]))
    check("bash: an option", bash_complete(script, ["latchkey", "serve", "--pres"]) == ["--presence"])
    check("bash: an option's choices", set(bash_complete(script, ["latchkey", "serve", "--presence", ""]))
          == {"auto", "deny", "prompt", "notify", "control"})
    check("bash: a group's subcommands", "list" in bash_complete(script, ["latchkey", "credentials", ""]))
    check("bash: a subcommand's own option", bash_complete(script, ["latchkey", "credentials", "list", "--js"]) == ["--json"])
    check("bash: not another subcommand's option", bash_complete(script, ["latchkey", "credentials", "list", "--ye"]) == [])
    check("zsh reads its completion", run("zsh", "-n", f"{work}/_latchkey").returncode == 0)
    fish = run("fish", "-c", f"source {work}/latchkey.fish; complete -C 'latchkey serve --pres'; complete -C 'latchkey cre'")
    check("fish: an option and a command", "--presence" in fish.stdout and "credentials" in fish.stdout, fish.stdout + fish.stderr)

bare = run(BINARY)
check("bare latchkey: a short help on stderr, exit 64", bare.returncode == 64 and "Usage: latchkey <command>" in bare.stderr
      and bare.stdout == "", bare)
version = run(BINARY, "--version")
check("--version", version.returncode == 0 and version.stdout.startswith("latchkey "), version.stdout)
check("help serve is serve --help", run(BINARY, "help", "serve").stdout == run(BINARY, "serve", "--help").stdout)
check("credentials help list is credentials list --help",
      run(BINARY, "credentials", "help", "list").stdout == run(BINARY, "credentials", "list", "--help").stdout
      and "--json" in run(BINARY, "help", "credentials", "list").stdout)
narrow = run(BINARY, "serve", "--help", env={"COLUMNS": "60"}).stdout.splitlines()
check("serve --help wraps to COLUMNS", len(narrow) > 20 and all(len(l) <= 60 or " " not in l.strip() for l in narrow),
      [l for l in narrow if len(l) > 60])
piped = run(BINARY, "serve", "--help", env={"COLUMNS": ""}).stdout.splitlines()
check("serve --help is 80 columns when not a terminal", all(len(l) <= 80 or " " not in l.strip() for l in piped))
typo = run(BINARY, "serv")
check("did you mean, for a command", typo.returncode == 64 and "did you mean 'serve'" in typo.stderr, typo.stderr)
typo = run(BINARY, "credentials", "list", "--jsn")
check("did you mean, for an option", typo.returncode == 64 and "did you mean '--json'" in typo.stderr, typo.stderr)
check("top-level help is grouped, with examples", all(s in run(BINARY, "--help").stdout for s in ("Run a key:", "Examples:")))

print(f"cli docs tests: {sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed")
sys.exit(0 if all(RESULTS) else 1)
