"""Operating-system processes: start a detached `python -m …`, tell whether a pid still lives and runs what it ran
(psutil), whether it is still the process recorded (its start since boot), signal a process group. Background runs
and the Ray dispatcher are such processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import psutil

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
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.AccessDenied:
        return True
    except psutil.Error:
        return False


STUDIO_COMMANDS = ("core.runs.worker", "core.runs.ray.dispatch", "-m\x00core\x00")  # the studio's processes' argv


def process_token(pid: int) -> str | None:
    """An identity for the process `pid` is now: this boot's id and the process's start in clock ticks since boot
    (`/proc/PID/stat`, field 22). A pid is reused after its process ends or the machine restarts; the pair is not,
    and no clock step moves it. psutil's `create_time` adds the boot time as the wall clock has it, so a step of
    the clock (NTP, a resumed laptop) had moved every token and made live workers read as gone. None where /proc
    cannot tell (not Linux, or the process is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # the name, in parentheses, may hold spaces
    return f"{boot}:{fields[19]}" if len(fields) > 19 else None


def command_line(pid: int) -> str | None:
    """The process's argv joined by NUL bytes, or None where the system will not tell."""
    try:
        return "\x00".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return None


def is_process(pid: int | None, token: str | None) -> bool:
    """Whether `pid` is still the process recorded with `token` (`process_token`). A row recorded before tokens,
    or where the system cannot tell, counts when the pid runs one of the studio's commands; elsewhere, when it
    lives."""
    if not pid or pid <= 0 or not pid_alive(pid):
        return False
    now = process_token(pid)
    if token is not None and now is not None:
        return now == token
    command = command_line(pid)
    if command is None:
        return now is None  # nothing to ask: a live pid is all there is to go on
    return any(mark in command for mark in STUDIO_COMMANDS)


def runs_module(pid: int, module: str) -> bool:
    """Whether `pid` is alive and is `python -m module` (not another process that got the pid later)."""
    return pid > 0 and pid_alive(pid) and module in (command_line(pid) or "")


def signal_group(pid: int, sig: int) -> None:
    """Signal a process's whole group (our workers are session leaders), ignoring one already gone."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
