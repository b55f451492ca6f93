"""How to install and drive each agent CLI against the scripted server: one table row per agent.

The knowledge comes from the recordings in tests/fixtures/samples/live/ (each SCENARIO.md has
the command lines, variables and config files used there; FAILED.md what could not be run).

Templates in `command`, `new`, `resume`, `env` and `files` (plain text replacement, so JSON
braces need no escaping): {url} the server's base URL, {home} the fake $HOME, {prompt} the user
prompt, {sid} the scenario id, {cwd} the run's project directory, {venv} the agent's Python
environment (PyPI agents), {last} the name of the newest `last_session` match (the session to
continue, for agents that need its id).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Driver:
    name: str                      # the trajectoriz agent (agents/<name>.py NAME)
    package: str                   # "npm:<name>" or "pypi:<name>"
    pinned: str                    # the version recorded in tests/fixtures/samples/live/
    command: tuple                 # argv[0:] that starts the agent
    new: tuple                     # arguments for a new session
    resume: tuple | None           # arguments that continue the project's last session; None: no resume
    env: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)   # path under $HOME -> content, written before the runs
    parallel: bool = True          # the agent runs two tool calls of one turn
    finish_command: str | None = None   # the agent ends a task through its shell tool
    timeout: int = 240             # seconds one run may take
    python: tuple = (3, 10)        # the oldest Python a PyPI agent installs on
    typed_resume: bool = False     # the continuation runs only as a TUI: started in tmux, prompt typed
    last_session: str = ""         # glob under $HOME whose newest match's name is {last}
    binary: str = ""               # npm package of the agent's binary for {platform}, installable alone
    runtime: tuple = ()            # npm packages installed beside it, that it runs on ("bun@1.4.5")
    carry_args: tuple = ()         # what `trajectoriz resume`/`handoff` pass it after `--` here (its model)
    note: str = ""

    @property
    def registry(self) -> str:
        return self.package.split(":", 1)[0]

    @property
    def package_name(self) -> str:
        return self.package.split(":", 1)[1]


OPENAI_COMPATIBLE = """{
  "$schema": "{schema}",
  "autoupdate": false,
  "share": "disabled",
  "model": "fakellm/fake-model",
  "small_model": "fakellm/fake-model",
  "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow", "external_directory": "allow"},
  "provider": {
    "fakellm": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Fake LLM",
      "options": {"baseURL": "{url}/v1", "apiKey": "sk-fake-key"},
      "models": {"fake-model": {"name": "Fake Model", "tool_call": true,
                                "limit": {"context": 128000, "output": 8192}}}
    }
  }
}
"""

# Session retention off: at start-up Gemini CLI 0.61 deletes every chat its own quick reader
# cannot parse, and in one of our runs that was the resumed session of the previous run.
GEMINI_SETTINGS = """{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false,
              "sessionRetention": {"enabled": false}}
}
"""

QWEN_SETTINGS = """{
  "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "model": {"name": "fake-model"},
  "$version": 4
}
"""

CODEX_CONFIG = """model = "gpt-5-codex"
model_provider = "fakellm"
model_reasoning_effort = "medium"
model_reasoning_summary = "auto"
check_for_update_on_startup = false

[model_providers.fakellm]
name = "fakellm"
base_url = "{url}/v1"
env_key = "FAKELLM_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[otel]
exporter = "none"
"""

PI_MODELS = """{
  "providers": {
    "fakellm": {
      "baseUrl": "{url}",
      "api": "anthropic-messages",
      "apiKey": "sk-ant-fake-key",
      "models": [{"id": "claude-fake-model", "name": "Fake Claude", "reasoning": true,
                  "contextWindow": 200000, "maxTokens": 8192}]
    }
  }
}
"""

CLINE_PROVIDERS = """{
  "version": 1,
  "lastUsedProvider": "openai-compatible",
  "modes": {},
  "providers": {
    "openai-compatible": {
      "settings": {"provider": "openai-compatible", "apiKey": "sk-fake-key", "model": "fake-model",
                   "baseUrl": "{url}/v1"},
      "updatedAt": "2026-01-01T00:00:00.000Z",
      "tokenSource": "manual"
    }
  }
}
"""

HERMES_CONFIG = """model:
  provider: custom
  default: fake-model
  base_url: {url}/v1
  api_key: sk-fake-key
"""

KIMI_CONFIG = """default_model = "fake"
default_thinking = true

[providers.fakellm]
type = "kimi"
base_url = "{url}/v1"
api_key = "sk-fake-key"

[models.fake]
provider = "fakellm"
model = "fake-model"
max_context_size = 128000
capabilities = ["thinking"]
"""

CONTINUE_CONFIG = """name: conformance
version: 1.0.0
schema: v1
models:
  - name: fake-model
    provider: openai
    model: fake-model
    apiBase: {url}/v1
    apiKey: sk-fake-key
    roles: [chat, edit, apply]
    capabilities: [tool_use]
"""

DROID_SETTINGS = """{"customModels": [{"model": "fake-model", "displayName": "Fake", "baseUrl": "{url}/v1",
  "apiKey": "sk-fake-key", "provider": "generic-chat-completion-api", "maxOutputTokens": 8192}]}
"""

# gptme writes its calls as `@tool(id): {json}` lines with --tool-format tool (markdown blocks otherwise)
GPTME = ("--non-interactive", "--tool-format", "tool", "--model", "local/fake-model")
PI = ("--offline", "--provider", "fakellm", "--model", "claude-fake-model", "--thinking", "low")
KILO_ENV = {f"KILO_DISABLE_{what}": "1" for what in (
    "AUTOUPDATE", "MODELS_FETCH", "LSP_DOWNLOAD", "SHARE", "SESSION_INGEST", "PRESENCE", "CODEBASE_INDEXING")}
OPENCODE_ENV = {f"OPENCODE_DISABLE_{what}": "1" for what in ("AUTOUPDATE", "MODELS_FETCH", "LSP_DOWNLOAD", "SHARE")}
# mini-swe-agent records a working directory only when its config names one (environment.cwd)
MSWEA = ("-m", "openai/fake-model", "-c", "mini.yaml", "-c", "model.model_kwargs.api_base={url}/v1",
         "-c", "environment.cwd={cwd}", "-y", "--exit-immediately", "-l", "0")

DRIVERS = {d.name: d for d in [
    Driver("claude", "npm:@anthropic-ai/claude-code", "2.1.332", ("claude",),
           new=("-p", "{prompt}", "--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose"),
           resume=("-p", "--continue", "{prompt}", "--dangerously-skip-permissions"),
           env={"ANTHROPIC_BASE_URL": "{url}", "ANTHROPIC_API_KEY": "sk-ant-fake-key", "IS_SANDBOX": "1",
                "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}),
    Driver("codex", "npm:@openai/codex", "0.171.0", ("codex",),
           new=("exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "--json", "{prompt}"),
           resume=("exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
                   "resume", "--last", "{prompt}"),
           env={"CODEX_HOME": "{home}/.codex", "FAKELLM_API_KEY": "sk-fake-key"},
           files={".codex/config.toml": CODEX_CONFIG}),
    Driver("gemini", "npm:@google/gemini-cli", "0.61.0", ("gemini",),
           new=("--skip-trust", "--yolo", "-o", "stream-json", "-p", "{prompt}"),
           resume=("--skip-trust", "--yolo", "--resume", "latest", "-p", "{prompt}"),
           env={"GEMINI_API_KEY": "fake-gemini-key", "GOOGLE_GEMINI_BASE_URL": "{url}",
                "GEMINI_CLI_NO_RELAUNCH": "true"},
           files={".gemini/settings.json": GEMINI_SETTINGS}),
    Driver("opencode", "npm:opencode-ai", "1.18.33", ("opencode",),
           new=("run", "--format", "json", "--auto", "-m", "fakellm/fake-model", "{prompt}"),
           resume=("run", "--continue", "--auto", "{prompt}"),
           env=OPENCODE_ENV,
           files={".config/opencode/opencode.json": OPENAI_COMPATIBLE.replace("{schema}", "https://opencode.ai/config.json")}),
    Driver("copilot", "npm:@github/copilot", "1.0.102", ("copilot",),
           new=("--no-auto-update", "--yolo", "--output-format", "json", "-p", "{prompt}"),
           resume=("--no-auto-update", "--yolo", "--continue", "-p", "{prompt}"),
           env={"COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false", "COPILOT_PROVIDER_BASE_URL": "{url}/v1",
                "COPILOT_PROVIDER_TYPE": "openai", "COPILOT_PROVIDER_API_KEY": "sk-fake-key",
                "COPILOT_MODEL": "gpt-4o"}),
    Driver("qwen", "npm:@qwen-code/qwen-code", "0.24.4", ("qwen",),
           new=("--yolo", "-o", "stream-json", "{prompt}"),
           resume=("--yolo", "--continue", "{prompt}"),
           env={"OPENAI_API_KEY": "sk-fake-key", "OPENAI_BASE_URL": "{url}/v1", "OPENAI_MODEL": "fake-model"},
           files={".qwen/settings.json": QWEN_SETTINGS}),
    Driver("pi", "npm:@mariozechner/pi-coding-agent", "0.73.1", ("pi",),
           new=PI + ("--mode", "json", "-p", "{prompt}"),
           resume=PI + ("--continue", "-p", "{prompt}"),
           env={"PI_OFFLINE": "1"},
           files={".pi/agent/models.json": PI_MODELS}),
    Driver("cline", "npm:cline", "3.0.65", ("cline",),
           new=("--auto-approve", "true", "--json", "{prompt}"),
           resume=("--auto-approve", "true", "--id", "{last}"),
           files={".cline/data/settings/providers.json": CLINE_PROVIDERS},
           typed_resume=True, last_session=".cline/data/sessions/*",
           note="`cline --id` runs only as the TUI: the continuation is typed into it through tmux"),
    Driver("kilo", "npm:@kilocode/cli", "7.7.7", ("kilo",),
           new=("run", "--format", "json", "--auto", "-m", "fakellm/fake-model", "{prompt}"),
           resume=("run", "--continue", "--auto", "{prompt}"),
           env=KILO_ENV, binary="@kilocode/cli-{platform}",
           files={".config/kilo/kilo.json": OPENAI_COMPATIBLE.replace("{schema}", "https://app.kilo.ai/config.json")}),
    Driver("hermes", "pypi:hermes-agent", "0.19.0", ("{venv}/bin/hermes",),
           new=("--yolo", "-z", "{prompt}"),
           resume=("chat", "--yolo", "-Q", "--continue", "-q", "{prompt}"),
           env={"OPENAI_API_KEY": "sk-fake-key", "HERMES_ACCEPT_HOOKS": "1"},
           files={".hermes/config.yaml": HERMES_CONFIG}),
    Driver("kimi", "pypi:kimi-cli", "1.52.0",
           ("{venv}/bin/python", "-c",
            "import sys; from kimi_cli.__main__ import run_original_cli; sys.exit(run_original_cli(sys.argv[1:]))"),
           new=("--print", "--output-format", "stream-json", "--yolo", "-p", "{prompt}"),
           resume=("--print", "--yolo", "--continue", "-p", "{prompt}"),
           files={".kimi/config.toml": KIMI_CONFIG}, python=(3, 13),
           note="the archived package's `kimi` script only prints a notice: the original CLI is run"),
    Driver("openhands", "pypi:openhands", "1.16.0", ("{venv}/bin/openhands",),
           new=("--headless", "--json", "--override-with-envs", "--always-approve", "-t", "{prompt}"),
           resume=("--headless", "--json", "--override-with-envs", "--always-approve", "--resume", "--last",
                   "-t", "{prompt}"),
           env={"LLM_API_KEY": "sk-fake-key", "LLM_MODEL": "openai/fake-model", "LLM_BASE_URL": "{url}/v1",
                "OPENHANDS_SUPPRESS_BANNER": "1"},
           python=(3, 12)),
    Driver("continue", "npm:@continuedev/cli", "1.5.47", ("cn",),
           new=("-p", "{prompt}", "--config", "{home}/.continue/config.yaml", "--auto"),
           resume=("-p", "--resume", "{prompt}", "--config", "{home}/.continue/config.yaml", "--auto"),
           files={".continue/config.yaml": CONTINUE_CONFIG}),
    Driver("omp", "npm:@oh-my-pi/pi-coding-agent", "18.2.3", ("omp",),
           new=PI[1:] + ("--yolo", "--mode", "json", "-p", "{prompt}"),
           resume=PI[1:] + ("--yolo", "--continue", "-p", "{prompt}"),
           files={".omp/agent/models.json": PI_MODELS}, runtime=("bun@1.4.5",),
           note="runs on bun (npm `bun`, >= 1.3.14), installed beside it"),
    Driver("droid", "npm:droid", "0.215.0", ("droid",),
           new=("exec", "--auto", "high", "-m", "custom:fake-model", "{prompt}"),
           resume=None,
           files={".factory/settings.json": DROID_SETTINGS}, carry_args=("--auto", "high", "-m", "custom:fake-model"),
           note="no continuation: `droid exec -s <id>` exits 1 and prints nothing, `--fork <id>` starts a new session"),
    Driver("gptme", "pypi:gptme", "0.35.1", ("{venv}/bin/gptme",),
           new=GPTME + ("{prompt}",),
           resume=GPTME + ("--resume", "{prompt}"),
           env={"OPENAI_BASE_URL": "{url}/v1", "OPENAI_API_KEY": "sk-fake-key", "GPTME_TIKTOKEN_TIMEOUT": "0"},
           parallel=False,
           note="one call per reply (the second of a turn is not run); a reply without a call gets two "
                "`<system>` nudges before gptme stops"),
    Driver("mswea", "pypi:mini-swe-agent", "2.4.6", ("{venv}/bin/mini",),
           new=MSWEA + ("-o", "{home}/.config/mini-swe-agent/trajectories/{sid}.traj.json", "-t", "{prompt}"),
           resume=None,
           env={"MSWEA_GLOBAL_CONFIG_DIR": "{home}/.config/mini-swe-agent", "MSWEA_COST_TRACKING": "ignore_errors",
                "MSWEA_CONFIGURED": "true", "OPENAI_API_KEY": "sk-fake-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
           parallel=False, finish_command="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
           note="no resume: one trajectory file per run"),
]}
