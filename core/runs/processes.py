"""Operating-system processes: start a detached `python -m …`, tell whether a pid still lives, signal a
process group. Background runs and the Ray dispatcher are such processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from core.environment import STUDIO
from core.paths import REPO_ROOT


def launch(home: Path, args: list[str], log_path: Path, threads: int | None = None) -> int:
    """Start `python -m ARGS` in its own session (so it outlives the app), logging to `log_path`, with the
    studio's environment set before the process imports anything, and at most `threads` compute threads when given.
    A thread waits for it, so it is reaped the moment it ends: a finished worker had stayed a zombie child of the
    dashboard until the server stopped."""
    env = {**STUDIO, **os.environ, "STUDIO_HOME": str(home), "PYTHONPATH": str(REPO_ROOT)}
    if threads is not None:  # read by torch (OpenMP) and MKL when they load
        env |= {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", *args], cwd=REPO_ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc.pid


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (reaped here when it is our own child)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    except OSError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        try:
            return "\nState:\tZ" not in status.read_text()
        except OSError:
            return False
    return True


STUDIO_COMMANDS = ("core.runs.worker", "core.runs.ray.dispatch", "-m\x00core\x00")  # the studio's processes' argv


def process_token(pid: int) -> str | None:
    """An identity for the process `pid` is now: this boot's id and the process's start time (`/proc/PID/stat`,
    field 22, in clock ticks since boot). A pid is reused after its process ends or the machine restarts; the
    pair is not. None where /proc cannot tell (not Linux, or the process is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # the name, in parentheses, may hold spaces
    return f"{boot}:{fields[19]}" if len(fields) > 19 else None


def is_process(pid: int | None, token: str | None) -> bool:
    """Whether `pid` is still the process recorded with `token` (`process_token`). A row recorded before tokens,
    or where /proc cannot tell, counts when the pid runs one of the studio's commands; elsewhere, when it lives."""
    if not pid or pid <= 0 or not pid_alive(pid):
        return False
    now = process_token(pid)
    if token is not None and now is not None:
        return now == token
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return now is None  # no /proc to ask (not Linux): a live pid is all there is to go on
    return any(mark in command for mark in STUDIO_COMMANDS)


def runs_module(pid: int, module: str) -> bool:
    """Whether `pid` is alive and is `python -m module` (not another process that got the pid later)."""
    try:
        return pid > 0 and pid_alive(pid) and module in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def signal_group(pid: int, sig: int) -> None:
    """Signal a process's whole group (our workers are session leaders), ignoring one already gone."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
