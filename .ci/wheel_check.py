"""The package as a user installs it: sdist and wheel built, the wheel installed in a clean venv, used.

Run by `make package-check` (part of `make test`) with the dev venv's Python:
1. `python -m build` makes the sdist, and the wheel from the sdist (so a file missing from the sdist fails);
2. the wheel holds one top-level package, `videoferry` (with `py.typed` and the emulator), and no benchmarks
   or tests;
3. a new venv (no repository on its path, run from an empty folder) installs the wheel and its `emulator`
   extra;
4. `videoferry --version`, `videoferry emulator` (a real server on loopback), three clips made by the
   installed package, and `videoferry migrate` of the three: exit status 0, three videos in the workspace,
   each `done`.
Nothing secret is printed: the emulator's sandbox token is read from its first line and passed in the
environment only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION_TIMEOUT = 120
MIGRATE_TIMEOUT = 300


def fail(message: str) -> None:
    """Stop with a message naming what the package got wrong."""
    print(f"package-check: {message}", file=sys.stderr)
    raise SystemExit(1)


def build(out: Path) -> tuple[Path, Path]:
    """The sdist and the wheel built from it."""
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True, text=True
    )
    if built.returncode != 0:
        fail(f"python -m build exited {built.returncode}:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}")
    wheels = sorted(out.glob("videoferry-*.whl"))
    sdists = sorted(out.glob("videoferry-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        fail(f"expected one wheel and one sdist in {out}, found {[p.name for p in out.iterdir()]}")
    return sdists[0], wheels[0]


def check_contents(sdist: Path, wheel: Path) -> None:
    """One namespace, typed, the emulator in, the benchmarks and the tests out."""
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    if tops != {"videoferry"}:
        fail(f"the wheel installs top-level {sorted(tops)}; only 'videoferry' is expected")
    for needed in (
        "videoferry/py.typed",
        "videoferry/emulator/__main__.py",
        "videoferry/flows/cli/__init__.py",
    ):
        if needed not in names:
            fail(f"the wheel lacks {needed}")
    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    if not any(m.endswith("/videoferry/py.typed") for m in members):
        fail("the sdist lacks videoferry/py.typed")
    print(f"package-check: {wheel.name} ({len(names)} files, one package 'videoferry'), {sdist.name}")


def install(wheel: Path, venv: Path) -> Path:
    """A clean venv with the wheel and its emulator extra; its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, f"videoferry[emulator] @ {wheel.as_uri()}"], check=True)
    script = venv / "bin" / "videoferry"
    if not script.exists():
        # Seen twice in CI, beside the test suite: pip exited 0 and left no script (cause not found). Say what
        # pip recorded, then install the wheel alone once more: a wheel without the entry point fails again.
        show = [str(venv / "bin" / "python"), "-m", "pip", "show", "-f", "videoferry"]
        shown = subprocess.run(show, capture_output=True, text=True).stdout[-1500:]
        print(f"package-check: pip exited 0 but left no {script.name} script; pip show: {shown!r}")
        subprocess.run([*pip, "--force-reinstall", "--no-deps", str(wheel)], check=True)
        if not script.exists():
            fail(f"the installed wheel has no {script.name} script in {script.parent}")
    return venv / "bin"


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a new user: no repository on the path, no Prefect server, nothing of ours set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIDEOFERRY_", "PREFECT_"))}
    env.pop("PYTHONPATH", None)
    env["PREFECT_HOME"] = str(home / "prefect")
    env["HOME"] = str(home)
    return env


def migrate_three(bin_dir: Path, work: Path, env: dict[str, str]) -> None:
    """`videoferry emulator`, three clips, `videoferry migrate`: three videos done."""
    version = subprocess.run(
        [str(bin_dir / "videoferry"), "--version"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=VERSION_TIMEOUT,
    ).stdout.strip()
    if not version.startswith("videoferry "):
        fail(f"videoferry --version printed {version!r}")
    print(f"package-check: {version}")
    emulator = subprocess.Popen(
        [str(bin_dir / "videoferry"), "emulator", "--port", "0", "--upload-port", "0"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert emulator.stdout is not None
        first = emulator.stdout.readline()
        if not first:
            fail("`videoferry emulator` ended before it printed its workspace")
        ws = json.loads(first)
        make = (
            "import sys; from pathlib import Path; from videoferry.emulator.media import make_clip\n"
            "for i in range(3): make_clip(Path(sys.argv[1]) / f'clip{i}.mp4', seconds=1.0, seed=i)"
        )
        subprocess.run([str(bin_dir / "python"), "-c", make, str(work)], cwd=work, env=env, check=True)
        inventory = work / "inventory.csv"
        inventory.write_text("source,title\n" + "".join(f"clip{i}.mp4,Clip {i}\n" for i in range(3)))
        run_env = {**env, "VIDEOFERRY_TOKEN": ws["token"]}
        args = [
            str(bin_dir / "videoferry"),
            "migrate",
            str(inventory),
            "--parent-id",
            ws["project_id"],
            "--ledger",
            str(work / "ledger.db"),
            "--api-url",
            ws["base_url"],
            "--upload-url",
            ws["upload_url"],
            "-q",
        ]
        started = time.monotonic()
        done = subprocess.run(
            args, cwd=work, env=run_env, capture_output=True, text=True, timeout=MIGRATE_TIMEOUT
        )
        if done.returncode != 0:
            fail(
                f"videoferry migrate exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        request = urllib.request.Request(
            f"{ws['base_url']}/v1/videos?per_page=100", headers={"Authorization": f"Bearer {ws['token']}"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback emulator
            videos = json.load(answer)
        items = videos.get("data", videos.get("videos", videos)) if isinstance(videos, dict) else videos
        statuses = sorted(v.get("status", "?") for v in items)
        if statuses != ["done", "done", "done"]:
            fail(f"after the migration the workspace holds {statuses}, expected three videos done")
        print(
            f"package-check: migrate of 3 clips from the installed wheel: exit 0, 3 videos done "
            f"({time.monotonic() - started:.1f} s)"
        )
    finally:
        emulator.terminate()
        try:
            emulator.wait(timeout=15)
        except subprocess.TimeoutExpired:
            emulator.kill()


def main() -> None:
    """Build, check, install, use; the temporary folder is removed unless KEEP_PACKAGE_CHECK is set."""
    tmp = Path(tempfile.mkdtemp(prefix="videoferry-package-"))
    try:
        sdist, wheel = build(tmp / "dist")
        check_contents(sdist, wheel)
        bin_dir = install(wheel, tmp / "venv")
        work = tmp / "work"
        work.mkdir()
        migrate_three(bin_dir, work, clean_env(tmp))
    finally:
        if not os.environ.get("KEEP_PACKAGE_CHECK"):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
