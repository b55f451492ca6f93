"""A real headless Chromium for the tests that look at pages as a person does (test_page_browser.py):
driven through the DevTools protocol over a pipe (`--remote-debugging-pipe`: JSON messages ended
by NUL on file descriptors 3 and 4), with the standard library alone: no Selenium, no websocket.

One browser per test module (`Browser`), one tab per test (`Browser.tab()`); a page is loaded,
its DOM read and changed with JavaScript, clicked with the mouse (Input events, not .click()),
typed into, and photographed.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1200,900"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Browser:
    """A headless Chromium in a fresh, empty profile, driven over its DevTools pipe."""

    def __init__(self, flags: tuple = (), timeout: float = 30):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="trajectoriz-chromium-")
        to_child, self._out = os.pipe()
        self._in, from_child = os.pipe()

        def pipes():  # the child's fds 3 (it reads) and 4 (it writes), as the pipe mode expects
            a, b = os.dup(to_child), os.dup(from_child)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.process = subprocess.Popen(
            [chromium(), *FLAGS, *flags, f"--user-data-dir={self.profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=pipes, pass_fds=(3, 4), close_fds=True)
        os.close(to_child)
        os.close(from_child)
        self._next = 0
        self._lock = threading.Lock()
        self._answers: dict = {}
        self.events: list = []
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                with self._arrived:
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                    self._arrived.notify_all()

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        with self._lock:
            self._next += 1
            number = self._next
        message = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        with self._arrived:
            while number not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{method}: no answer from Chromium in {self.timeout} s")
                self._arrived.wait(left)
            answer = self._answers.pop(number)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def wait_event(self, method: str, session: str, after: int, timeout: float | None = None) -> dict:
        """The first event `method` of `session` that arrived after the `after`-th event."""
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._arrived:
            while True:
                for event in self.events[after:]:
                    if event.get("method") == method and event.get("sessionId") == session:
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {method} in {timeout or self.timeout} s")
                self._arrived.wait(left)

    def tab(self) -> "Tab":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        return Tab(self, target, session)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


class Tab:
    def __init__(self, browser: Browser, target: str, session: str):
        self.browser, self.target, self.session = browser, target, session
        self.send("Page.enable")
        self.send("Runtime.enable")

    def send(self, method: str, params: dict | None = None) -> dict:
        return self.browser.send(method, params, self.session)

    def goto(self, url: str) -> None:
        """Load `url` and wait for its load event."""
        seen = len(self.browser.events)
        answer = self.send("Page.navigate", {"url": url})
        if answer.get("errorText"):
            raise RuntimeError(f"{url}: {answer['errorText']}")
        self.browser.wait_event("Page.loadEventFired", self.session, seen)

    def js(self, expression: str):
        """The value of a JavaScript expression in the page (as JSON gives it back)."""
        answer = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def click(self, selector: str) -> None:
        """A mouse click (press and release) at the middle of the element's first box, scrolled into view."""
        box = self.js(f"(function(){{var e=document.querySelector({json.dumps(selector)});"
                      f"if(!e)return null;e.scrollIntoView({{block:'center'}});var r=e.getClientRects()[0];"
                      f"return [r.left+Math.min(r.width/2,20),r.top+r.height/2];}})()")
        if box is None:
            raise LookupError(f"no element {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                   "button": "left", "clickCount": 1})

    def type(self, text: str) -> None:
        self.send("Input.insertText", {"text": text})

    def key(self, key: str, code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key,
                                                 "windowsVirtualKeyCode": code, "text": "\r" if key == "Enter" else ""})

    def wait_for(self, expression: str, timeout: float = 10):
        """Poll until the expression is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.05)

    def screenshot(self, path: str, full: bool = False) -> None:
        params = {"format": "png"}
        if full:
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params)["data"]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.target})
