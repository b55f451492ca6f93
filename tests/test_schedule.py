"""archiving/schedule.py: the daily archive job, as a systemd user timer or a crontab line.

The real user is never touched: `systemctl` and `crontab` are fake scripts first (and alone) on
$PATH. Both record their arguments; the fake systemctl answers `--user show-environment` unless
FAKE_NO_SYSTEMD is set (as where no user instance runs); the fake crontab keeps the crontab in a
file, and says "no crontab for ..." as cron does when there is none.
"""

from __future__ import annotations

import os
import stat

import pytest

from archiving import schedule
from core.errors import UserError

SYSTEMCTL = """#!/bin/sh
printf 'systemctl %s\\n' "$*" >> "$FAKE_LOG"
if [ "$*" = "--user show-environment" ] && [ -n "$FAKE_NO_SYSTEMD" ]; then
  echo "Failed to connect to bus: No medium found" >&2; exit 1
fi
exit 0
"""
CRONTAB = """#!/bin/sh
printf 'crontab %s\\n' "$*" >> "$FAKE_LOG"
[ -n "$FAKE_CRON_DENIED" ] && { echo "You are not allowed to use this program (crontab)" >&2; exit 1; }
case "$1" in
  -l) [ -e "$FAKE_CRONTAB" ] && exec /bin/cat "$FAKE_CRONTAB"; echo "no crontab for tester" >&2; exit 1;;
  -) exec /bin/cat > "$FAKE_CRONTAB";;
  -r) exec /bin/rm -f "$FAKE_CRONTAB";;
esac
exit 2
"""
COMMAND = ["/opt/traj ectoriz/bin/trajectoriz", "archive"]


def tool(folder, name: str, text: str) -> None:
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def env(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    tool(fake, "systemctl", SYSTEMCTL)
    tool(fake, "crontab", CRONTAB)
    home = tmp_path / "home"
    home.mkdir()
    return {"PATH": str(fake), "HOME": str(home), "FAKE_LOG": str(tmp_path / "calls"),
            "FAKE_CRONTAB": str(tmp_path / "crontab")}


def calls(env) -> list[str]:
    try:
        with open(env["FAKE_LOG"]) as handle:
            found = handle.read().splitlines()
    except FileNotFoundError:
        return []
    os.remove(env["FAKE_LOG"])
    return [call for call in found if call != "systemctl --user show-environment" and call != "crontab -l"]


def crontab(env) -> bytes | None:
    try:
        with open(env["FAKE_CRONTAB"], "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def units(env) -> str:
    return os.path.join(env["HOME"], ".config", "systemd", "user")


def no_systemd(env) -> dict:
    return {**env, "FAKE_NO_SYSTEMD": "1"}


# systemd -------------------------------------------------------------------------------------------
def test_a_systemd_timer_is_installed_where_a_user_instance_answers(env):
    said = schedule.install(COMMAND, env)
    assert said.startswith("daily systemd user timer trajectoriz-archive.timer")
    assert calls(env) == ["systemctl --user daemon-reload",
                          "systemctl --user enable --now trajectoriz-archive.timer"]
    with open(os.path.join(units(env), schedule.SERVICE)) as handle:
        service = handle.read()
    assert 'ExecStart="/opt/traj ectoriz/bin/trajectoriz" "archive"\n' in service
    with open(os.path.join(units(env), schedule.TIMER)) as handle:
        timer = handle.read()
    assert "OnCalendar=daily\nPersistent=true\n" in timer and "WantedBy=timers.target" in timer
    assert crontab(env) is None


def test_unit_files_are_owner_only_and_so_are_the_folders_created_for_them(env):
    schedule.install(COMMAND, env)
    for name in (schedule.SERVICE, schedule.TIMER):
        assert stat.S_IMODE(os.stat(os.path.join(units(env), name)).st_mode) == 0o600
    for folder in (".config", ".config/systemd", ".config/systemd/user"):
        assert stat.S_IMODE(os.stat(os.path.join(env["HOME"], folder)).st_mode) == 0o700


def test_xdg_config_home_holds_the_units(env, tmp_path):
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    schedule.install(COMMAND, env)
    assert os.path.exists(tmp_path / "config" / "systemd" / "user" / schedule.TIMER)


def test_exec_start_keeps_specifiers_variables_and_quotes_literal(env):
    schedule.install(["/bin/echo", '50% of $HOME "quoted" \\ back'], env)
    with open(os.path.join(units(env), schedule.SERVICE)) as handle:
        assert 'ExecStart="/bin/echo" "50%% of $$HOME \\"quoted\\" \\\\ back"\n' in handle.read()


def test_the_timer_installed_twice_is_one_timer_and_removal_undoes_it(env):
    schedule.install(COMMAND, env)
    schedule.install(COMMAND + ["--quiet"], env)
    assert sorted(os.listdir(units(env))) == [schedule.SERVICE, schedule.TIMER]
    with open(os.path.join(units(env), schedule.SERVICE)) as handle:
        assert '"archive" "--quiet"\n' in handle.read()
    calls(env)
    os.makedirs(os.path.join(units(env), "timers.target.wants"))
    os.symlink(os.path.join(units(env), schedule.TIMER),
               os.path.join(units(env), "timers.target.wants", schedule.TIMER))
    assert schedule.remove(env) == "removed the systemd user timer trajectoriz-archive.timer"
    assert calls(env) == ["systemctl --user disable --now trajectoriz-archive.timer",
                          "systemctl --user daemon-reload"]
    assert os.listdir(units(env)) == ["timers.target.wants"]
    assert os.listdir(os.path.join(units(env), "timers.target.wants")) == []
    assert schedule.remove(env) == "nothing was scheduled"
    assert calls(env) == []


def test_a_unit_trajectoriz_did_not_write_is_left_alone(env):
    os.makedirs(units(env))
    foreign = os.path.join(units(env), schedule.TIMER)
    with open(foreign, "w") as handle:
        handle.write("[Timer]\nOnCalendar=hourly\n")
    with pytest.raises(UserError, match="not written by trajectoriz"):
        schedule.install(COMMAND, env)
    assert schedule.remove(env) == "nothing was scheduled"
    with open(foreign) as handle:
        assert handle.read() == "[Timer]\nOnCalendar=hourly\n"
    assert not os.path.exists(os.path.join(units(env), schedule.SERVICE))


def test_a_failing_systemctl_is_one_line(env, tmp_path):
    tool(tmp_path / "bin", "systemctl",
         '#!/bin/sh\n[ "$2" = show-environment ] && exit 0\necho "Unit not found." >&2\nexit 4\n')
    with pytest.raises(UserError) as raised:
        schedule.install(COMMAND, env)
    assert str(raised.value) == "systemctl --user daemon-reload failed: Unit not found."


# cron ----------------------------------------------------------------------------------------------
OTHERS = (b"# my own jobs\nMAILTO=me@example.com\n*/5 * * * * /usr/bin/backup --to '/mnt/b  x' # keep\n"
          b"0 3 * * * caf\xe9 \\%d\n\n@reboot   /home/me/start.sh\t\n")


def test_without_a_systemd_user_instance_a_crontab_line_is_added_and_others_kept_byte_for_byte(env):
    env = no_systemd(env)
    with open(env["FAKE_CRONTAB"], "wb") as handle:
        handle.write(OTHERS)
    said = schedule.install(COMMAND + ["--note", "100%"], env)
    assert said.startswith("daily crontab line (30 12 * * *) runs: ")
    line = b"30 12 * * * '/opt/traj ectoriz/bin/trajectoriz' archive --note 100\\% " + \
        schedule.CRON_MARK.encode() + b"\n"
    assert crontab(env) == OTHERS + line
    assert not os.path.exists(units(env))
    assert schedule.remove(env) == "removed the crontab line"
    assert crontab(env) == OTHERS


def test_the_crontab_line_is_never_duplicated(env):
    env = no_systemd(env)
    with open(env["FAKE_CRONTAB"], "wb") as handle:
        handle.write(OTHERS)
    schedule.install(COMMAND, env)
    first = crontab(env)
    calls(env)
    schedule.install(COMMAND, env)
    assert calls(env) == []          # the same line is already there: nothing written
    schedule.install(["/usr/local/bin/trajectoriz", "archive"], env)
    assert crontab(env).count(schedule.CRON_MARK.encode()) == 1
    assert crontab(env).startswith(OTHERS) and b"/usr/local/bin/trajectoriz" in crontab(env)
    assert first != crontab(env)


def test_a_last_line_without_a_newline_keeps_its_bytes(env):
    env = no_systemd(env)
    with open(env["FAKE_CRONTAB"], "wb") as handle:
        handle.write(b"0 1 * * * /bin/true")
    schedule.install(COMMAND, env)
    assert crontab(env).split(b"\n")[0] == b"0 1 * * * /bin/true"
    schedule.remove(env)
    assert crontab(env) == b"0 1 * * * /bin/true\n"


def test_a_crontab_created_for_the_line_is_removed_with_it(env):
    env = no_systemd(env)
    schedule.install(COMMAND, env)
    assert crontab(env).count(b"\n") == 1
    assert calls(env) == ["crontab -"]
    assert schedule.remove(env) == "removed the crontab line"
    assert calls(env) == ["crontab -r"] and crontab(env) is None
    assert schedule.remove(env) == "nothing was scheduled"


def test_without_systemctl_on_path_crontab_is_used(env, tmp_path):
    os.remove(tmp_path / "bin" / "systemctl")
    assert schedule.install(COMMAND, env).startswith("daily crontab line")


def test_remove_undoes_both_when_both_were_installed(env):
    schedule.install(COMMAND, no_systemd(env))
    schedule.install(COMMAND, env)
    assert schedule.remove(env) == \
        "removed the systemd user timer trajectoriz-archive.timer; removed the crontab line"
    assert crontab(env) is None and not os.path.exists(os.path.join(units(env), schedule.TIMER))


# neither -------------------------------------------------------------------------------------------
def test_neither_systemd_nor_crontab_is_one_clear_line(env, tmp_path):
    env = {**env, "PATH": str(tmp_path / "empty")}
    for action in (lambda: schedule.install(COMMAND, env), lambda: schedule.remove(env)):
        with pytest.raises(UserError) as raised:
            action()
        assert "\n" not in str(raised.value)
        assert str(raised.value).startswith("cannot schedule the daily archive: no systemd user instance")
        assert "(crontab: not found)" in str(raised.value)


def test_a_crontab_the_user_may_not_use_counts_as_none(env):
    env = {**no_systemd(env), "FAKE_CRON_DENIED": "1"}
    with pytest.raises(UserError, match=r"\(You are not allowed to use this program \(crontab\)\)"):
        schedule.install(COMMAND, env)
    assert crontab(env) is None


@pytest.mark.parametrize("command", [["trajectoriz", "archive"], [], ["/bin/t", "a\nb"], ["/bin/t", "a\0"]])
def test_a_command_neither_could_run_is_refused(env, command):
    with pytest.raises(UserError):
        schedule.install(command, env)
    assert calls(env) == [] and not os.path.exists(units(env))
