"""The one exception the CLI turns into a clean message: `trajectoriz: <message>` on stderr and
an exit code, never a traceback."""


class UserError(Exception):
    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
