"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
JSON messages ended by a NUL byte, read by Chromium from fd 3, written to fd 4): no
websocket library, no puppeteer. Used by web-check.py and bench/web.sh."""

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


class Chrome:
    def __init__(self, width=1280, height=860):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            raise SystemExit("chromium is not installed (scripts/setup installs it)")
        self.profile = tempfile.mkdtemp(prefix="ringlet-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        args = [
            exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-sync",
            "--disable-background-networking", "--disable-dev-shm-usage",
            "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
            "--window-size=%d,%d" % (width, height), "about:blank",
        ]
        # The shell puts the pipes at fds 3 and 4, where Chromium looks for them.
        self.proc = subprocess.Popen(
            ["sh", "-c", 'exec "$@" 3<&%d 4>&%d' % (to_chrome_r, from_chrome_w), "sh"] + args,
            pass_fds=(to_chrome_r, from_chrome_w),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.page("Page.enable")
        self.page("Runtime.enable")
        self.page("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            left = end - time.time()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            r, _, _ = select.select([self.from_chrome], [], [], left)
            if r:
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise EOFError("chromium closed its pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def _send(self, method, params, session):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        while True:
            m = self._read(60)
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def call(self, method, **params):
        return self._send(method, params, None)

    def page(self, method, **params):
        return self._send(method, params, self.session)

    def eval(self, expr):
        r = self.page("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def goto(self, url):
        self.page("Page.navigate", url=url)

    def wait(self, expr, timeout=20, what=None):
        end = time.time() + timeout
        while time.time() < end:
            try:
                v = self.eval(expr)
            except RuntimeError:
                v = None
            if v:
                return v
            time.sleep(0.05)
        raise TimeoutError("waited %ds for %s" % (timeout, what or expr))

    def mouse(self, kind, x, y, buttons=1, clicks=1):
        self.page("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                  buttons=buttons, clickCount=clicks)

    def drag(self, x0, x1, y):
        self.mouse("mouseMoved", x0, y, buttons=0)
        self.mouse("mousePressed", x0, y)
        for k in range(1, 11):
            self.mouse("mouseMoved", x0 + (x1 - x0) * k / 10, y)
        self.mouse("mouseReleased", x1, y, buttons=0)

    def dblclick(self, x, y):
        self.mouse("mousePressed", x, y, clicks=1)
        self.mouse("mouseReleased", x, y, buttons=0, clicks=1)
        self.mouse("mousePressed", x, y, clicks=2)
        self.mouse("mouseReleased", x, y, buttons=0, clicks=2)

    def screenshot(self, path):
        png = self.page("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(png["data"]))

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)
