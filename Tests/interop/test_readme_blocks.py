"""README's quickstart and release-day blocks run as written (issue 42): every `patchctl`
line of each, in order, through bash (so a redirect or a comment is what a reader's shell does
with it), against a throwaway registry, and each must succeed. The release-day block runs in a
fresh git repository of an app, with README's `/srv/hotpatch` standing for the quickstart's
registry directory; its bundle differs from the quickstart's, as a day's fix would."""
import os
import re
import shutil
import subprocess

from hotpatch_testing import REPO_ROOT, binary, clean_env


def block(readme, after):
    """The lines of the first ```sh block after the line containing `after`."""
    start = readme.index(after)
    opening = readme.index("```sh\n", start) + len("```sh\n")
    return readme[opening:readme.index("```", opening)].splitlines()


def run_lines(lines, cwd, substitute=None):
    env = clean_env()
    env["PATH"] = f"{binary('PATCHCTL', 'patchctl').parent}{os.pathsep}{env.get('PATH', '')}"
    ran = []
    for line in lines:
        if not line.startswith("patchctl "):
            continue
        command = substitute(line) if substitute else line
        result = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"README line failed ({result.returncode}): {line}\n{result.stdout}{result.stderr}"
        ran.append((line, result.stdout))
    return ran


def test_readme_quickstart_and_release_day_blocks_run_as_written(tmp_path):
    readme = (REPO_ROOT / "README.md").read_text()
    quick = tmp_path / "hotpatch"
    shutil.copytree(REPO_ROOT / "patches", quick / "patches")
    ran = run_lines(block(readme, "## Quickstart (local registry)"), quick)
    assert len(ran) >= 8, "the quickstart block lost its patchctl lines"
    assert (quick / "demo.root.json").stat().st_size > 0 and (quick / "site").is_dir()

    app = tmp_path / "myapp"
    (app / "patches" / "demo" / "2.3").mkdir(parents=True)
    (app / "patches" / "demo" / "2.3" / "main.js").write_text("defineClass('LoginViewController', { viewDidLoad: function() {} });\n")
    subprocess.run(["git", "init", "-q", str(app)], check=True)
    day = block(readme, "Day to day, from the app's repository")
    ran = run_lines(day, app, substitute=lambda line: line.replace("/srv/hotpatch", str(quick)))
    assert len(ran) >= 10, "the release-day block lost its patchctl lines"
    rollback = next(out for line, out in ran if line.startswith("patchctl rollback --app-version 2.3 --expect-patch"))
    assert re.search(r"^revoked demo 2\.3 patch 3 \(production\)$", rollback, re.M), rollback
    assert "demo 2.3 now serves: patch 1 → 100 %" in rollback, rollback
    status = next(out for line, out in ran if line.startswith("patchctl status"))
    assert "halted: 2.3 production patch 3" in status, status
    assert not (app / "data").exists() and not (app / "keys").exists(), "no registry or key was made inside the app's repository"
