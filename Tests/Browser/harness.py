"""What the browser tests share: their arguments and working folders, Debian's chromium driven headless, a child
process whose output is read line by line and waited on by condition, a failure that says what was seen, a free
loopback port. Imported by studio_test.py, bay_test.py, library_test.py and swings_bench.py."""
import argparse, os, re, signal, socket, subprocess, tempfile, threading, time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.remote_connection import RemoteConnection

procs = []

# No WebDriver command waits for ever: Selenium's own default is no timeout at all, so a renderer that stopped answering
# on a loaded machine held a clean-clone `make test` for as long as nobody killed it.
RemoteConnection.set_timeout(90)


def watchdog(seconds, cleanup=lambda: None):
    """Ends the script, failing, if it is still running after `seconds`: its children killed, `cleanup` asked (the
    browser), the last lines it said kept. A browser that hangs cannot hang the test run."""
    def fire():
        print(f'FAIL: still running after {seconds} s; every child killed', flush=True)
        for p in procs:
            if p.p.poll() is None:
                p.p.kill()
        try:
            cleanup()
        finally:
            os._exit(1)
    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()


def test_arguments(prefix, more=None):
    """The arguments every browser test takes (--host-tool, --tool, --out, --work; `more` adds its own), the output
    folder made, a work folder (a new one named for `prefix` unless --work gives it) with its library folder, and the
    environment the tools run in (their state kept in the work folder, never the person's own)."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--host-tool', required=True)
    ap.add_argument('--tool', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--work', default=None)
    if more:
        more(ap)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = args.work or tempfile.mkdtemp(prefix=prefix)
    library = os.path.join(work, 'library')
    os.makedirs(library, exist_ok=True)
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, 'state'), SWIFT_BACKTRACE='enable=no')
    return args, work, library, env


def chromium(size='1400,1000', media=True):
    """Debian's chromium through chromium-driver, headless (never a downloaded browser); `media`: videos play without
    a gesture, muted."""
    opts = Options()
    opts.binary_location = '/usr/bin/chromium'
    flags = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', f'--window-size={size}']
    if media:
        flags += ['--autoplay-policy=no-user-gesture-required', '--mute-audio']
    for a in flags:
        opts.add_argument(a)
    return webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=opts)


def fail(msg):
    print('FAIL: ' + msg, flush=True)
    raise SystemExit(1)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Proc:
    """A child whose output is collected line by line; `wait_for` blocks on a condition until a line matches."""

    def __init__(self, argv, env=None, name=''):
        self.name, self.lines, self.cv = name, [], threading.Condition()
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, close_fds=True)
        procs.append(self)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            with self.cv:
                self.lines.append(line.rstrip('\n'))
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def wait_for(self, pattern, timeout=60):
        """The first line matching `pattern`; fails, showing the last lines, when none comes in `timeout` seconds or the
        child ends without one."""
        rx, deadline = re.compile(pattern), time.monotonic() + timeout
        with self.cv:
            while True:
                for line in self.lines:
                    m = rx.search(line)
                    if m:
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or self.p.poll() is not None:
                    fail(f'{self.name}: no line matching {pattern!r}; output:\n' + '\n'.join(self.lines[-40:]))
                self.cv.wait(timeout=min(left, 1.0))

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
