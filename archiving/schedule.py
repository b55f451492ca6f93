"""The daily job that runs the archive (`trajectoriz archive --schedule` / `--unschedule`).

Where the user's systemd instance answers (`systemctl --user show-environment` succeeds), a
timer: `trajectoriz-archive.service` and `.timer` in `${XDG_CONFIG_HOME:-~/.config}/systemd/user`
(the first folder of systemd's user unit search path), then `systemctl --user daemon-reload` and
`enable --now` of the timer. `OnCalendar=daily` with `Persistent=true` runs a day missed while
the machine was off at the next start; a user's timers run while they are logged in, or always
once `loginctl enable-linger` is set. Elsewhere (containers, no systemd), one crontab line,
found again by the comment that ends it: `crontab -l` is read, that line added or replaced, every
other line written back as it was, byte for byte, through `crontab -`. Cron runs the line through
/bin/sh (the trailing `# ...` is a shell comment) and turns an unescaped `%` into a newline, so
`%` is written `\\%`.

`systemctl` and `crontab` are the ones `$PATH` names in the environment given. Unit files are
written owner-only (`cache.write_private`); a file of the same name that trajectoriz did not write
(it lacks `MARK`) is never replaced or removed. Every command is given `TIMEOUT` seconds.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass

from core import cache
from core.errors import UserError

NAME = "trajectoriz-archive"
SERVICE, TIMER = f"{NAME}.service", f"{NAME}.timer"
MARK = "# Written by trajectoriz archive --schedule; archive --unschedule removes it."
CRON_MARK = f"# {NAME}: trajectoriz archive --unschedule removes this line"
CRON_TIME = "30 12 * * *"   # midday: cron runs nothing it missed while the machine was off
TIMEOUT = 30
NEITHER = ("cannot schedule the daily archive: no systemd user instance answers (systemctl "
           "--user) and crontab cannot be used ({why}); run `trajectoriz archive` daily yourself")


@dataclass
class Ran:
    code: int | None        # None when the command could not be run at all
    out: bytes = b""
    err: bytes = b""

    def reason(self) -> str:
        lines = self.err.decode("utf-8", "replace").strip().splitlines()
        return lines[0][:200] if lines else f"exit status {self.code}"


def run(argv: list[str], env, stdin: bytes = b"") -> Ran:
    """`argv` with its program looked up in the environment's $PATH; never raises."""
    program = shutil.which(argv[0], path=env.get("PATH", os.defpath))
    if program is None:
        return Ran(None, err=f"{argv[0]}: not found".encode())
    try:
        done = subprocess.run([program, *argv[1:]], input=stdin, capture_output=True,
                              env=dict(env), timeout=TIMEOUT)
    except (OSError, subprocess.SubprocessError) as exc:
        return Ran(None, err=str(exc).encode())
    return Ran(done.returncode, done.stdout, done.stderr)


def checked(argv: list[str], env, stdin: bytes = b"") -> Ran:
    ran = run(argv, env, stdin)
    if ran.code != 0:
        raise UserError(f"{' '.join(argv)} failed: {ran.reason()}")
    return ran


def check_command(command: list[str]) -> None:
    if not command or not all(isinstance(arg, str) for arg in command):
        raise UserError("nothing to schedule")
    if not os.path.isabs(command[0]):
        raise UserError(f"the command to schedule must start with an absolute path, not {command[0]!r}")
    if any(c in arg for arg in command for c in "\0\n\r"):
        raise UserError("the command to schedule holds a line break or NUL, which neither "
                        "systemd nor cron takes")


# systemd ------------------------------------------------------------------------------------------
def unit_dir(env) -> str:
    return os.path.join(cache.xdg_dir(env, "XDG_CONFIG_HOME", ".config"), "systemd", "user")


def systemd_usable(env) -> bool:
    return run(["systemctl", "--user", "show-environment"], env).code == 0


def systemd_quote(arg: str) -> str:
    """One ExecStart argument: double-quoted, `\\` and `"` escaped, `%` (a specifier) and `$`
    (a variable) doubled."""
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{escaped}"'


def units(command: list[str]) -> dict[str, str]:
    exec_start = " ".join(map(systemd_quote, command))
    return {
        SERVICE: f"{MARK}\n[Unit]\nDescription=trajectoriz: archive every agent session\n\n"
                 f"[Service]\nType=oneshot\nExecStart={exec_start}\n",
        TIMER: f"{MARK}\n[Unit]\nDescription=trajectoriz: archive every agent session, daily\n\n"
               f"[Timer]\nOnCalendar=daily\nPersistent=true\nRandomizedDelaySec=1h\n\n"
               f"[Install]\nWantedBy=timers.target\n",
    }


def ours(path: str) -> bool | None:
    """Whether the unit file at `path` is one trajectoriz wrote; None when there is none."""
    try:
        with open(path, "rb") as handle:
            return handle.readline().rstrip(b"\n") == MARK.encode()
    except FileNotFoundError:
        return None
    except OSError:
        return False


def foreign_units(directory: str) -> list[str]:
    return [name for name in (SERVICE, TIMER) if ours(os.path.join(directory, name)) is False]


def install_timer(command: list[str], env) -> str:
    directory = unit_dir(env)
    foreign = foreign_units(directory)
    if foreign:
        raise UserError(f"{os.path.join(directory, foreign[0])} exists and was not written by "
                        "trajectoriz: left as it is")
    for name, text in units(command).items():
        try:
            cache.write_private(os.path.join(directory, name), text.encode("utf-8", "surrogateescape"))
        except OSError as exc:
            raise UserError(f"cannot write {os.path.join(directory, name)}: {exc.strerror}") from None
    checked(["systemctl", "--user", "daemon-reload"], env)
    checked(["systemctl", "--user", "enable", "--now", TIMER], env)
    return f"daily systemd user timer {TIMER} ({directory}) runs: {shlex.join(command)}"


def remove_timer(env, usable: bool) -> str | None:
    """Disable and delete the timer and its service, when trajectoriz installed them."""
    directory = unit_dir(env)
    present = [name for name in (SERVICE, TIMER) if ours(os.path.join(directory, name))]
    if not present:
        return None
    if usable:
        run(["systemctl", "--user", "disable", "--now", TIMER], env)  # gone below if this fails
    link = os.path.join(directory, "timers.target.wants", TIMER)  # what `enable` made, should
    for path in [os.path.join(directory, name) for name in present] + [link]:  # disable not run
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise UserError(f"cannot remove {path}: {exc.strerror}") from None
    if usable:
        checked(["systemctl", "--user", "daemon-reload"], env)
    return f"removed the systemd user timer {TIMER}"


# cron ---------------------------------------------------------------------------------------------
def read_crontab(env) -> tuple[bytes | None, str]:
    """The user's crontab (b"" when there is none), or None and why crontab cannot be used."""
    ran = run(["crontab", "-l"], env)
    if ran.code == 0:
        return ran.out, ""
    if ran.code is not None and b"no crontab" in ran.err.lower():
        return b"", ""
    return None, ran.reason()


def cron_line(command: list[str]) -> bytes:
    shell = " ".join(map(shlex.quote, command)).replace("%", "\\%")
    return os.fsencode(f"{CRON_TIME} {shell} {CRON_MARK}\n")


def without_ours(crontab: bytes) -> tuple[bytes, bool]:
    """The crontab without trajectoriz's line, every other line as it was; whether it had one."""
    lines = crontab.split(b"\n")
    kept = [line for line in lines if not line.endswith(CRON_MARK.encode())]
    return b"\n".join(kept), len(kept) != len(lines)


def install_cron(command: list[str], crontab: bytes, env) -> str:
    kept, _ = without_ours(crontab)
    if kept and not kept.endswith(b"\n"):
        kept += b"\n"
    wanted = kept + cron_line(command)
    if wanted != crontab:
        checked(["crontab", "-"], env, wanted)
    return f"daily crontab line ({CRON_TIME}) runs: {shlex.join(command)}"


def remove_cron(crontab: bytes, env) -> str | None:
    kept, found = without_ours(crontab)
    if not found:
        return None
    if kept.strip():
        checked(["crontab", "-"], env, kept)
    else:
        checked(["crontab", "-r"], env)
    return "removed the crontab line"


# the two entry points ------------------------------------------------------------------------------
def install(command: list[str], env) -> str:
    """Install the daily job running `command`; one line saying what was installed."""
    check_command(command)
    if systemd_usable(env):
        return install_timer(command, env)
    crontab, problem = read_crontab(env)
    if crontab is None:
        raise UserError(NEITHER.format(why=problem))
    return install_cron(command, crontab, env)


def remove(env) -> str:
    """Undo `install`, wherever it installed the job (idempotent); one line saying what was done."""
    usable = systemd_usable(env)
    crontab, problem = read_crontab(env)
    installed_units = any(ours(os.path.join(unit_dir(env), name)) for name in (SERVICE, TIMER))
    if not usable and crontab is None and not installed_units:
        raise UserError(NEITHER.format(why=problem))
    done = [remove_timer(env, usable), remove_cron(crontab, env) if crontab is not None else None]
    return "; ".join(filter(None, done)) or "nothing was scheduled"
