"""docs/DEPLOYMENT.md and deploy/haproxy.cfg agree with the tools (issue 21, item 5).

- Every program a command block of DEPLOYMENT.md runs is one of ours (patchd, patchctl), is on
  PATH once `make test` has installed its packages, or the line says which package to install
  (`# apt-get install rsync`): an operator following the page never meets "command not found".
- haproxy.cfg reads no environment variable patchd reads: one EnvironmentFile for both must not
  bind patchd to the proxy's address (both once read HOTPATCH_LISTEN)."""
import re
import shutil

from hotpatch_testing import REPO_ROOT

DEPLOYMENT = REPO_ROOT / "docs" / "DEPLOYMENT.md"
OURS = {"patchd", "patchctl"}
SHELL_WORDS = {"export", "sudo", "env", "cd"}


def command_blocks(text):
    """The indented code blocks of a markdown text, as lists of lines."""
    blocks, current, previous = [], None, ""
    for line in text.splitlines():
        if line.startswith("    ") and (current is not None or previous.strip() == ""):
            current = (current or []) + [line[4:]]
        else:
            if current:
                blocks.append(current)
            current = None
        previous = line
    if current:
        blocks.append(current)
    return blocks


def programs(line):
    """The programs a shell line runs (each part of a pipeline), after VAR=value assignments."""
    code = line.split(" #", 1)[0].strip()
    if not code or code.startswith(("#", "-", "--")) or re.match(r"^[A-Z]+ [A-Z]", code) or re.match(r"^[\w.-]+:", code):
        return []  # a comment, SQL, YAML
    found = []
    for part in code.split("|"):
        words = [w for w in part.split() if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)]
        while words and words[0] in SHELL_WORDS:
            words = words[1:]
        if words and re.match(r"^[a-z][\w.-]*$", words[0]):
            found.append(words[0])
    return found


def test_every_program_deployment_md_runs_is_ours_installed_or_says_how_to_install_it():
    lines = [line for block in command_blocks(DEPLOYMENT.read_text()) for line in block]
    checked, missing = set(), []
    for line in lines:
        for program in programs(line):
            checked.add(program)
            if program not in OURS and not shutil.which(program) and f"apt-get install {program}" not in line:
                missing.append((program, line.strip()))
    assert not missing, f"DEPLOYMENT.md runs programs nothing installs: {missing}"
    assert {"patchd", "patchctl", "haproxy", "rsync"} <= checked, checked  # the parser found the commands


def test_haproxy_cfg_reads_no_variable_patchd_reads():
    patchd = set(re.findall(r'"(HOTPATCH_[A-Z0-9_]+)"', (REPO_ROOT / "Sources" / "patchd" / "main.swift").read_text()))
    config = (REPO_ROOT / "deploy" / "haproxy.cfg").read_text()
    proxy = set(re.findall(r"\$\{(\w+)\}", config)) | set(re.findall(r"^\s*presetenv (\w+)", config, re.M))
    assert "HOTPATCH_LISTEN" in patchd and "HOTPATCH_PROXY_LISTEN" in proxy, (patchd, proxy)
    assert not patchd & proxy, f"read by both patchd and haproxy: {sorted(patchd & proxy)}"
