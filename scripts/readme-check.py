#!/usr/bin/env python3
"""Runs the commands README.md shows, as written, so that it cannot drift
from the program.

    scripts/readme-check.py                      run every check
    scripts/readme-check.py --setup-command N    print the README's Nth set-up
                                                 command (1: serve, 2: tests)

The commands are read from README.md itself (its 4-space-indented blocks;
`\\` continuations joined, trailing `# comments` dropped), never copied:

- Set-up command 1 (section "On a fresh Debian machine") is run exactly as
  written from the repository root, with NFSX_LISTEN on a free loopback port
  and NFSX_STATE_DIR in a scratch directory (both read by `nfsx serve`); a
  file put in the exported directory is listed with `nfs-ls` and read back
  with `nfs-cat` over NFSv3 and NFSv4, then the server gets SIGTERM and must
  exit.
- Set-up command 2 (the test suite) is what .ci/run runs, through
  `--setup-command 2`; here it only has to name an executable.
- In the other sections, `nfsx serve` lines run target/release/nfsx (or
  $NFSX) on free ports: `--listen`/`--metrics` are moved to free loopback
  ports, `--state-dir` to a scratch directory, and an `--exports`/`--config`
  file that does not exist is replaced by a scratch one (an exports file
  exporting a scratch directory, docs/nfsx.example.toml); the `nfs-ls`,
  `nfs-cat` and `nfs-cp` lines after one run against it (the server's port
  added to their URLs, a missing local file made up). `nfsx bench` lines run
  with `--dry-run` (every option checked, every target reached) against a
  scratch server and directory; the first one also runs for real, once.
  An `nfsx mount URL DIR` line after a served export mounts it (the
  server's port put in the URL, DIR made if missing) and must show up in
  /proc/mounts; a file is written and read back through it; an
  `nfsx umount DIR` line must unmount it and end the mount's process.
  `scripts/kdc.sh` lines run as they are and must succeed.

Prints one line per command and ends with `readme: N passed, M failed`.
Exits 1 when any failed. Needs libnfs-utils (nfs-ls, nfs-cat, nfs-cp).
"""

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP_SECTION = "On a fresh Debian machine"
# Options of `nfsx serve` that take a value (so the DIR is the other word).
SERVE_VALUE_OPTS = {"--listen", "--backend", "--exports", "--config", "--state-dir", "--metrics",
                    "--portmap-port", "--log", "--log-format"}
# How long the README's serve command may take to answer: on a fresh clone
# it compiles the whole workspace first.
FIRST_START_SECS = 1800
START_SECS = 60
CLIENT_SECS = 120


def strip_comment(line):
    """Drops a trailing `# comment` that is outside quotes."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def readme_blocks(path):
    """[(section, [command, ...])] for every indented code block."""
    blocks, section, current = [], "", None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for line in lines:
        if line.startswith("## "):
            section = line[3:].strip()
        if line.startswith("    ") and line.strip():
            if current is None:
                current = (section, [])
                blocks.append(current)
            current[1].append(line[4:])
        else:
            current = None
    out = []
    for section, raw in blocks:
        cmds, pending = [], ""
        for line in raw:
            line = strip_comment(line)
            if line.endswith("\\"):
                pending += line[:-1].strip() + " "
                continue
            cmd = (pending + line.strip()).strip()
            pending = ""
            if cmd:
                cmds.append(cmd)
        out.append((section, cmds))
    return out


def setup_commands(blocks):
    return [c for s, cmds in blocks if s == SETUP_SECTION for c in cmds]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Server:
    """A server started from a README line, in its own process group."""

    def __init__(self, argv_or_cmd, env, log, cwd=REPO, shell=False):
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            ["bash", "-c", argv_or_cmd] if shell else argv_or_cmd,
            cwd=cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_port(self, port, secs):
        deadline = time.time() + secs
        while time.time() < deadline:
            if port_open(port):
                return None
            if self.proc.poll() is not None:
                return f"exited with status {self.proc.returncode} before answering on port {port}"
            time.sleep(0.2)
        return f"did not answer on port {port} within {secs} s"

    def stop(self):
        """SIGTERM to the group; the server must exit by itself."""
        if self.proc.poll() is not None:
            self.log.close()
            return f"had already exited with status {self.proc.returncode}"
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
            err = None
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            err = "did not exit within 30 s of SIGTERM"
        self.log.close()
        return err


def serve_dir(tokens):
    """The DIR argument of an `nfsx serve` command, or None."""
    try:
        i = tokens.index("serve")
    except ValueError:
        return None
    rest = tokens[i + 1:]
    j = 0
    while j < len(rest):
        t = rest[j]
        if t in ("&&", "||", ";", "|"):
            return None
        if t.startswith("--"):
            j += 1 if "=" in t or t not in SERVE_VALUE_OPTS else 2
            continue
        return t
    return None


def is_mounted(path):
    with open("/proc/mounts") as f:
        return any(line.split(" ")[1] == path for line in f)


def with_port(url, port):
    """A libnfs URL with the server's port in it."""
    q = f"nfsport={port}" if "version=4" in url else f"nfsport={port}&mountport={port}"
    return url + ("&" if "?" in url else "?") + q


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.tmp = tempfile.mkdtemp(prefix="nfsx-readme-")
        self.nfsx = os.environ.get("NFSX", os.path.join(REPO, "target/release/nfsx"))
        self.base_env = dict(os.environ, NFSX_LOG="warn")
        for k in ("NFSX_LISTEN", "NFSX_STATE_DIR", "NFSX_METRICS", "NFSX_PORTMAP_PORT"):
            self.base_env.pop(k, None)

    def result(self, cmd, err):
        if err is None:
            self.passed += 1
            print(f"ok    {cmd}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL  {cmd}\n      {err}", flush=True)

    def skip(self, cmd, why):
        self.skipped += 1
        print(f"skip  {cmd}\n      {why}", flush=True)

    def scratch(self, name):
        p = os.path.join(self.tmp, name)
        os.makedirs(p, exist_ok=True)
        return p

    def run(self, argv, cwd=None, secs=CLIENT_SECS, stdin=None):
        try:
            r = subprocess.run(argv, cwd=cwd or self.tmp, env=self.base_env, capture_output=True,
                               timeout=secs, stdin=stdin or subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {secs} s"
        except OSError as e:
            return None, str(e)
        if r.returncode != 0:
            tail = (r.stderr or r.stdout).decode(errors="replace").strip().splitlines()[-3:]
            return r, f"exit status {r.returncode}: {' | '.join(tail)}"
        return r, None

    # -- set-up command 1: the serve command, exactly as written
    def check_setup_serve(self, cmd):
        tokens = shlex.split(cmd)
        export = serve_dir(tokens)
        if not export or not export.startswith("/"):
            return self.result(cmd, "cannot find the absolute DIR of `serve DIR` in the command")
        existed = os.path.exists(export)
        if not existed and os.geteuid() != 0 and not os.access(os.path.dirname(export), os.W_OK):
            return self.skip(cmd, f"{export} cannot be created without root")
        port = free_port()
        env = dict(self.base_env, NFSX_LISTEN=f"127.0.0.1:{port}",
                   NFSX_STATE_DIR=self.scratch("setup-state"), NFSX_PORTMAP_PORT="0")
        server = Server(cmd, env, os.path.join(self.tmp, "setup-serve.log"), shell=True)
        name = f"readme-check-{os.getpid()}.txt"
        content = f"written by scripts/readme-check.py at {time.time()}\n".encode()
        err = server.wait_port(port, FIRST_START_SECS)
        try:
            if err is None:
                with open(os.path.join(export, name), "wb") as f:
                    f.write(content)
                err = self.check_listing_and_read(export, name, content, port)
        finally:
            stop_err = server.stop()
            err = err or stop_err
            try:
                os.remove(os.path.join(export, name))
            except OSError:
                pass
            if not existed:
                shutil.rmtree(export, ignore_errors=True)
        if err:
            with open(os.path.join(self.tmp, "setup-serve.log"), errors="replace") as f:
                err += " | log: " + " / ".join(f.read().strip().splitlines()[-3:])
        self.result(cmd, err)

    def check_listing_and_read(self, export, name, content, port):
        for version in ("3", "4"):
            url = with_port(f"nfs://127.0.0.1{export}?version={version}", port)
            r, err = self.run(["nfs-ls", url])
            if err:
                return f"nfs-ls {url}: {err}"
            if name not in r.stdout.decode(errors="replace"):
                return f"nfs-ls {url} does not list {name}"
        url = with_port(f"nfs://127.0.0.1{export}/{name}?version=3", port)
        r, err = self.run(["nfs-cat", url])
        if err:
            return f"nfs-cat {url}: {err}"
        if r.stdout != content:
            return f"nfs-cat {url} read {len(r.stdout)} bytes that differ from the {len(content)} written"
        return None

    # -- set-up command 2: what .ci/run runs
    def check_setup_tests(self, cmd):
        prog = shlex.split(cmd)[0]
        path = prog if os.path.isabs(prog) else os.path.join(REPO, prog)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)) and not shutil.which(prog):
            return self.result(cmd, f"{prog} is not an executable in the repository or on PATH")
        with open(os.path.join(REPO, ".ci/run")) as f:
            if "--setup-command 2" not in f.read():
                return self.result(cmd, ".ci/run does not run this command from README.md")
        self.result(cmd, None)

    # -- `nfsx serve ...` lines elsewhere
    def start_serve(self, cmd, n):
        tokens = shlex.split(cmd)
        if tokens[0] == "nfsx":
            tokens[0] = self.nfsx
        out, env, made = [], dict(self.base_env), []
        port = free_port()
        i = 0
        while i < len(tokens):
            t = tokens[i]
            val = tokens[i + 1] if i + 1 < len(tokens) else None
            if t == "--listen":
                out += [t, f"127.0.0.1:{port}"]
            elif t == "--metrics":
                out += [t, f"127.0.0.1:{free_port()}"]
            elif t == "--state-dir":
                out += [t, self.scratch(f"state-{n}")]
            elif t == "--exports" and val and not os.path.exists(val):
                d = self.scratch(f"export-{n}")
                p = os.path.join(self.tmp, f"exports-{n}")
                with open(p, "w") as f:
                    f.write(f"{d} 127.0.0.1(rw,insecure,no_root_squash)\n")
                out += [t, p]
            elif t == "--config" and val and not os.path.exists(val):
                out += [t, os.path.join(REPO, "docs/nfsx.example.toml")]
            else:
                out.append(t)
                i += 1
                continue
            i += 2
        if "--listen" not in out:
            env["NFSX_LISTEN"] = f"127.0.0.1:{port}"
        if "--state-dir" not in out:
            env["NFSX_STATE_DIR"] = self.scratch(f"state-{n}")
        if "--portmap-port" not in out:
            env["NFSX_PORTMAP_PORT"] = "0"
        export = serve_dir(out)
        if export and not os.path.exists(export):
            os.makedirs(export)
            made.append(export)
        server = Server(out, env, os.path.join(self.tmp, f"serve-{n}.log"))
        err = server.wait_port(port, START_SECS)
        return server, port, export, made, err

    def run_client_line(self, cmd, port):
        tokens = shlex.split(cmd)
        argv = []
        for t in tokens[1:]:
            if t.startswith("nfs://"):
                argv.append(with_port(t, port))
            else:
                if not os.path.exists(os.path.join(self.tmp, t)) and "/" not in t and "." in t:
                    with open(os.path.join(self.tmp, t), "wb") as f:
                        f.write(os.urandom(1 << 20))
                argv.append(t)
        _, err = self.run([tokens[0]] + argv)
        return err

    # -- `nfsx mount URL DIR` / `nfsx umount DIR`
    def start_mount(self, cmd, port, n):
        tokens = [t for t in shlex.split(cmd) if t != "&"]
        if len(tokens) < 4:
            return None, "expected `nfsx mount URL DIR`"
        url, mnt = tokens[2], tokens[3]
        m = re.match(r"nfs://([^/:]+)(:\d+)?(/.*)", url)
        if not m:
            return None, f"cannot read the URL {url}"
        url = f"nfs://127.0.0.1:{port}{m.group(3)}"
        os.makedirs(mnt, exist_ok=True)
        proc = Server([self.nfsx, "mount", url, mnt] + tokens[4:], self.base_env,
                      os.path.join(self.tmp, f"mount-{n}.log"))
        deadline = time.time() + START_SECS
        while not is_mounted(mnt):
            if proc.proc.poll() is not None or time.time() > deadline:
                proc.stop()
                return None, f"{mnt} was not mounted (log {proc.log.name})"
            time.sleep(0.1)
        probe = os.path.join(mnt, f"readme-probe-{n}")
        try:
            with open(probe, "wb") as f:
                f.write(b"through the mount\n")
            with open(probe, "rb") as f:
                ok = f.read() == b"through the mount\n"
            os.remove(probe)
        except OSError as e:
            ok = False
            print(f"      {e}")
        return (proc, mnt), None if ok else "a file written through the mount did not read back"

    def stop_mount(self, mount):
        proc, mnt = mount
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        return proc.stop() if proc.proc.poll() is None else None

    def check_block(self, cmds, n):
        server = None
        port = export = None
        made, before = [], set()
        mounts = {}
        try:
            for j, cmd in enumerate(cmds):
                if cmd.startswith("nfsx serve"):
                    if server:
                        self.result_stop(server, made, export, before)
                    server, port, export, made, err = self.start_serve(cmd, f"{n}-{j}")
                    before = set(os.listdir(export)) if export and os.path.isdir(export) else set()
                    self.result(cmd, err)
                    if err:
                        server.stop()
                        server = None
                elif cmd.startswith("nfsx mount"):
                    if server is None:
                        self.result(cmd, "no server started before it in its block")
                    else:
                        mount, err = self.start_mount(cmd, port, f"{n}-{j}")
                        if mount:
                            mounts[mount[1]] = mount
                        self.result(cmd, err)
                elif cmd.startswith("nfsx umount"):
                    mnt = shlex.split(cmd)[-1]
                    mount = mounts.pop(mnt, None)
                    _, err = self.run([self.nfsx, "umount", mnt])
                    if not err and mount:
                        try:
                            mount[0].proc.wait(timeout=20)
                        except subprocess.TimeoutExpired:
                            err = "the mount's process did not exit after the unmount"
                        mount[0].log.close()
                    self.result(cmd, err if err or mount else "nothing was mounted there")
                elif cmd.startswith("scripts/kdc.sh "):
                    r = subprocess.run(["bash", "-c", cmd], cwd=REPO, capture_output=True, timeout=CLIENT_SECS)
                    if r.returncode == 3:
                        self.skip(cmd, "no KDC packages and no root to install them")
                    else:
                        err = None if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-200:]}"
                        self.result(cmd, err)
                elif cmd.split()[0] in ("nfs-ls", "nfs-cat", "nfs-cp"):
                    if server is None:
                        self.result(cmd, "no server started before it in its block")
                    else:
                        self.result(cmd, self.run_client_line(cmd, port))
                else:
                    self.skip(cmd, "not a command this check knows how to run")
        finally:
            for mount in mounts.values():
                self.stop_mount(mount)
            if server:
                self.result_stop(server, made, export, before)

    def result_stop(self, server, made, export, before):
        err = server.stop()
        if err:
            self.result("(stopping the server above with SIGTERM)", err)
        if export and os.path.isdir(export) and export not in made:
            for e in set(os.listdir(export)) - before:
                p = os.path.join(export, e)
                shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
        for d in made:
            shutil.rmtree(d, ignore_errors=True)

    # -- `nfsx bench ...` lines
    def check_bench(self, cmds):
        export = self.scratch("bench-export")
        port = free_port()
        env = dict(self.base_env, NFSX_LISTEN=f"127.0.0.1:{port}", NFSX_STATE_DIR=self.scratch("bench-state"),
                   NFSX_PORTMAP_PORT="0")
        server = Server([self.nfsx, "serve", export], env, os.path.join(self.tmp, "bench-serve.log"))
        err = server.wait_port(port, START_SECS)
        if err:
            for c in cmds:
                self.result(c, f"the scratch server {err}")
            server.stop()
            return
        first = True
        try:
            for cmd in cmds:
                tokens = shlex.split(cmd)
                argv = [self.nfsx] + tokens[1:]
                for i, t in enumerate(argv):
                    prev = argv[i - 1] if i else ""
                    if prev == "--target":
                        argv[i] = f"nfs://127.0.0.1:{port}{export}" if t.startswith("nfs://") else self.scratch("bench-dir")
                    elif prev in ("--report", "--json"):
                        argv[i] = os.path.join(self.tmp, "bench-out", os.path.basename(t.rstrip("/")) or "out")
                        os.makedirs(os.path.dirname(argv[i]), exist_ok=True)
                # Two README targets may map to the same scratch target.
                seen, dedup = set(), []
                for i, t in enumerate(argv):
                    if i and argv[i - 1] == "--target" and t in seen:
                        dedup.pop()
                        continue
                    if i and argv[i - 1] == "--target":
                        seen.add(t)
                    dedup.append(t)
                _, err = self.run(dedup + ["--dry-run"], secs=CLIENT_SECS)
                if err is None and first:
                    _, err = self.run(dedup + ["--runs", "1", "--quiet"], secs=600)
                    err = err and f"real run: {err}"
                    first = False
                self.result(cmd, err)
        finally:
            stop = server.stop()
            if stop:
                self.result("(stopping the scratch server with SIGTERM)", stop)

    def main(self):
        blocks = readme_blocks(os.path.join(REPO, "README.md"))
        setup = setup_commands(blocks)
        if len(setup) < 2:
            self.result("README.md", f"section '{SETUP_SECTION}' has {len(setup)} commands, not 2")
        else:
            self.check_setup_serve(setup[0])
            self.check_setup_tests(setup[1])
        for n, (section, cmds) in enumerate(blocks):
            if section == SETUP_SECTION:
                continue
            bench = [c for c in cmds if c.startswith("nfsx bench")]
            other = [c for c in cmds if not c.startswith("nfsx bench")]
            if other:
                self.check_block(other, n)
            if bench:
                self.check_bench(bench)
        shutil.rmtree(self.tmp, ignore_errors=True)
        print(f"readme: {self.passed} passed, {self.failed} failed" + (f", {self.skipped} skipped" if self.skipped else ""))
        return 1 if self.failed else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--setup-command":
        cmds = setup_commands(readme_blocks(os.path.join(REPO, "README.md")))
        n = int(argv[2])
        if not 1 <= n <= len(cmds):
            print(f"README.md: no set-up command {n} in section '{SETUP_SECTION}'", file=sys.stderr)
            return 2
        print(cmds[n - 1])
        return 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    return Checker().main()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
