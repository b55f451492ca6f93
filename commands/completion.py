"""Shell completion for bash, zsh and fish, written from the program's one argparse parser
(`trajectoriz --completion SHELL`), and the session ids it offers (`trajectoriz complete-ids`).

Each option's value, and each command's operand, is completed by what its metavar names: a
session id (with files: `show` also takes a mount file's name), a file, a folder, an agent, or
the option's choices. The scripts ask the program itself for ids (the sessions of the current
project, as `list` shows them), so a completion never goes stale; every other candidate is
written into the script when it is printed.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

PROGRAMS = ("trajectoriz", "trajectoriz-cli")

# metavar -> what completes it
KINDS = {"ID": "ids", "FILE": "files", "DIR": "dirs", "P": "dirs", "MOUNTPOINT": "dirs", "NAME": "agents", "AGENT": "agents"}


@dataclass
class Option:
    names: list[str]
    help: str
    label: str  # its metavar: what zsh says it wants
    kind: str | None = None  # None: a flag; "none": a value nothing completes; else KINDS' or "words"
    words: list[str] = field(default_factory=list)


@dataclass
class Command:
    name: str
    help: str
    options: list[Option]
    operand: Option | None = None  # its positional argument, if any
    repeated: bool = False  # the operand may be given more than once


def run_script(shell: str, parser: argparse.ArgumentParser) -> int:
    """Prints the completion script of `shell` for the program's whole `parser`."""
    sys.stdout.write(script(shell, parser))
    return 0


def run_ids(args, env) -> int:
    """The current project's sessions, newest first, one `ID<tab>date agent: title` a line (the
    description is what zsh and fish show beside an id; bash takes the id alone)."""
    from commands.basics import selected, write
    from core.output import cell
    from discovery import catalog

    _, sessions, _ = selected(argparse.Namespace(all=False, dir=None, agent=None), env)
    write("".join(f"{s.short_id}\t{catalog.local_date(s)} {s.agent}: {cell(s.title, 60)}\n" for s in sessions))
    return 0


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    top = described(parser, "")
    commands = [described(sub, name, help_of(parser, name)) for name, sub in parser.subcommands.items()]
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](top, commands)


def help_of(parser: argparse.ArgumentParser, name: str) -> str:
    choices = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return next(a.help for a in choices._choices_actions if a.dest == name)


def described(parser: argparse.ArgumentParser, name: str, help_text: str = "") -> Command:
    command = Command(name, help_text, [])
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        option = Option(list(action.option_strings), short(action.help or ""), action.metavar or action.dest.upper(),
                        *value_of(action))
        if action.option_strings:
            command.options.append(option)
        else:
            command.operand, command.repeated = option, action.nargs in ("*", "+")
    return command


def value_of(action: argparse.Action) -> tuple[str | None, list[str]]:
    if action.nargs == 0:
        return None, []
    if action.choices:
        return "words", [str(c) for c in action.choices]
    kind = KINDS.get(action.metavar, "none")
    if kind == "agents":
        import agents

        return "words", agents.names()
    return kind, []


def short(text: str) -> str:
    """An option's help cut to its first clause, as a shell shows it beside the option."""
    for end in ("; ", " (", ": "):
        text = text.split(end, 1)[0]
    return text if len(text) <= 70 else text[:text.rindex(" ", 0, 67)] + "..."


def takes_value(option: Option) -> bool:
    return option.kind is not None


# bash ---------------------------------------------------------------------------------------------
BASH_HEAD = r"""# bash completion for trajectoriz (trajectoriz --completion bash)
_trajectoriz_values() {  # $1: ids, files, dirs, none or words; $2: the word typed; $3: the words
    local IFS=$'\n' program=${COMP_WORDS[0]}
    [[ $program == "~/"* ]] && program=$HOME/${program#"~/"}
    case $1 in
        ids) COMPREPLY=($(compgen -W "$("$program" complete-ids 2>/dev/null | cut -f1)" -- "$2"; compgen -f -- "$2"))
             compopt -o filenames 2>/dev/null ;;
        files) COMPREPLY=($(compgen -f -- "$2")); compopt -o filenames 2>/dev/null ;;
        dirs) COMPREPLY=($(compgen -d -- "$2")); compopt -o filenames 2>/dev/null ;;
        words) IFS=$' \n'; COMPREPLY=($(compgen -W "$3" -- "$2")) ;;
        *) COMPREPLY=() ;;
    esac
}

_trajectoriz() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} command="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
"""


EMPTY = '""'  # the case of no command yet


def bash(top: Command, commands: list[Command]) -> str:
    skipped = "|".join(n for o in top.options if takes_value(o) for n in o.names)
    lines = [BASH_HEAD.rstrip("\n"),
             f"            {skipped}) ((i++)) ;;" if skipped else None,
             "            -*) ;;",
             "            *) command=${COMP_WORDS[i]}; break ;;",
             "        esac",
             "    done",
             "    case $command in"]
    top.operand = Option([], "", "COMMAND", "words", [c.name for c in commands])
    for command in [top, *commands]:
        lines += [f"        {command.name or EMPTY})", *bash_command(command), "            ;;"]
    lines += ["    esac", "}", f"complete -F _trajectoriz {' '.join(PROGRAMS)}", ""]
    return "\n".join(line for line in lines if line is not None)


def bash_command(command: Command) -> list[str]:
    lines = ["            case $prev in"]
    completed_alike: dict[str, list[str]] = {}  # how a value is completed -> the options it follows
    for option in command.options:
        if takes_value(option):
            completed_alike.setdefault(bash_values(option), []).extend(option.names)
    lines += [f"                {'|'.join(names)}) {values}; return ;;" for values, names in completed_alike.items()]
    names = " ".join(n for o in command.options for n in o.names)
    lines += ["            esac",
              f'            if [[ $cur == -* ]]; then _trajectoriz_values words "$cur" "{names}"']
    if command.operand:
        lines.append(f"            else {bash_values(command.operand)}")
    else:
        lines.append(f'            else _trajectoriz_values words "$cur" "{names}"')
    lines.append("            fi")
    return lines


def bash_values(option: Option) -> str:
    return f'_trajectoriz_values {option.kind} "$cur" "{" ".join(option.words)}"'


# zsh ----------------------------------------------------------------------------------------------
ZSH_HEAD = r"""#compdef trajectoriz trajectoriz-cli
# zsh completion for trajectoriz (trajectoriz --completion zsh)

_trajectoriz_ids() {
    local -a ids
    ids=(${(f)"$(${~program} complete-ids 2>/dev/null)"})
    ids=("${(@)ids/$'\t'/:}")
    _describe -t sessions 'session id' ids
    _files
}

_trajectoriz() {
    local program=${words[1]} curcontext=$curcontext state line ret=1
    typeset -A opt_args
"""

ZSH_TAIL = """
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _trajectoriz "$@"
else
    compdef _trajectoriz trajectoriz trajectoriz-cli
fi
"""


def zsh(top: Command, commands: list[Command]) -> str:
    lines = [ZSH_HEAD.rstrip("\n"),
             "    _arguments -C \\",
             *(f"        {spec} \\" for spec in zsh_specs(top)),
             "        '1: :->command' \\",
             "        '*:: :->argument' && ret=0",
             "    case $state in",
             "        command)",
             "            local -a commands",
             "            commands=(",
             *(f"                {zsh_quote(c.name + ':' + short(c.help))}" for c in commands),
             "            )",
             "            _describe -t commands 'trajectoriz command' commands && ret=0 ;;",
             "        argument)",
             "            curcontext=${curcontext%:*:*}:trajectoriz-$words[1]:",
             "            case $words[1] in"]
    for command in commands:
        specs = zsh_specs(command)
        lines += [f"                {command.name})", "                    _arguments \\",
                  *(f"                        {spec} \\" for spec in specs[:-1]),
                  f"                        {specs[-1]} && ret=0 ;;"]
    lines += ["            esac ;;", "    esac", "    return ret", "}", ZSH_TAIL]
    return "\n".join(lines)


def zsh_specs(command: Command) -> list[str]:
    specs = []
    for option in command.options:
        value = f":{option.label}:{zsh_action(option)}" if takes_value(option) else ""
        text = zsh_escape(option.help)
        if len(option.names) == 1:
            specs.append(zsh_quote(f"{option.names[0]}[{text}]{value}"))
        else:
            specs.append(zsh_quote(f"({' '.join(option.names)})") + "{" + ",".join(option.names) + "}"
                         + zsh_quote(f"[{text}]{value}"))
    if command.operand:
        operand = command.operand
        prefix = "*" if command.repeated else ""
        specs.append(zsh_quote(f"{prefix}:{zsh_escape(operand.help)}:{zsh_action(operand)}"))
    return specs


def zsh_action(option: Option) -> str:
    return {"ids": "_trajectoriz_ids", "files": "_files", "dirs": "_files -/",
            "words": f"({' '.join(option.words)})"}.get(option.kind, " ")


def zsh_escape(text: str) -> str:
    for char in "\\[]:":
        text = text.replace(char, "\\" + char)
    return text


def zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# fish ---------------------------------------------------------------------------------------------
FISH_HEAD = """# fish completion for trajectoriz (trajectoriz --completion fish)
function __trajectoriz_ids
    set -l program (commandline -opc)[1]
    $program complete-ids 2>/dev/null
end

complete -c trajectoriz -f
complete -c trajectoriz-cli -w trajectoriz"""


def fish(top: Command, commands: list[Command]) -> str:
    lines = [FISH_HEAD]
    lines += fish_options(top, "__fish_use_subcommand")
    lines += [f"complete -c trajectoriz -n __fish_use_subcommand -a {c.name} -d {fish_quote(short(c.help))}"
              for c in commands]
    for command in commands:
        condition = fish_quote(f"__fish_seen_subcommand_from {command.name}")
        lines += fish_options(command, condition)
        if command.operand and fish_values(command.operand):
            lines.append(f"complete -c trajectoriz -n {condition} {fish_values(command.operand)}")
    return "\n".join(lines) + "\n"


def fish_options(command: Command, condition: str) -> list[str]:
    lines = []
    for option in command.options:
        names = " ".join(f"-s {n[1:]}" if len(n) == 2 else f"-l {n[2:]}" for n in option.names)
        value = []
        if takes_value(option):  # -x: no file names unless they are what the value is
            value = ["-r" if option.kind in ("ids", "files") else "-x", fish_values(option)]
        parts = ["complete -c trajectoriz -n", condition, names, *value, "-d", fish_quote(option.help)]
        lines.append(" ".join(part for part in parts if part))
    return lines


def fish_values(option: Option) -> str:
    return {"ids": "-F -a '(__trajectoriz_ids)'", "files": "-F",
            "dirs": "-a '(__fish_complete_directories (commandline -ct) \"\")'",
            "words": f"-a {fish_quote(' '.join(option.words))}"}.get(option.kind, "")


def fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

