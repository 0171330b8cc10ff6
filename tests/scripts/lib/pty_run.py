#!/usr/bin/env python3
# Drive a command through a pseudo-terminal, as a user at a terminal would: a small "expect".
#
#   python3 pty_run.py DIR -- COMMAND [ARG...] < SCRIPT
#
# The command runs as the session leader of a new terminal; everything it writes there
# (stdout and stderr, with the terminal's echo of what is sent) goes to DIR/transcript. SCRIPT
# has one step a line (shell-like quoting; \r \n \x04 ... escapes in TEXT):
#   expect TEXT          wait until TEXT appears after the cursor; the cursor moves past it
#   capture NAME TEXT    the same, and write what came before TEXT to DIR/NAME
#   output               wait until something comes after the cursor
#   send TEXT            type TEXT (Enter is \r, Ctrl-D \x04)
#   intr                 Ctrl-C: the terminal's interrupt character, typed while the command is
#                        stopped (SIGSTOP), which is continued only once the SIGINT is pending,
#                        so the command cannot run on between the decision to interrupt and
#                        the interrupt
#   exit N               wait for the command to end; its exit status must be N
# Waits poll for as long as it takes (a busy machine only makes them slower); a wait gives up
# only after PTY_RUN_TIMEOUT seconds (default 900), or at once when the command has ended.
# Exit status 0 when every step passed, else 1 with the reason and the transcript's tail.
import codecs
import os
import pty
import select
import shlex
import signal
import sys
import time

TIMEOUT = float(os.environ.get("PTY_RUN_TIMEOUT", "900"))


def die(msg, out):
    tail = out[-600:].decode("utf-8", "replace")
    sys.stderr.write("pty_run: %s\n--- transcript tail ---\n%s\n---\n" % (msg, tail))
    sys.exit(1)


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.stderr.write("usage: pty_run.py DIR -- COMMAND [ARG...] < SCRIPT\n")
        sys.exit(2)
    outdir, argv = sys.argv[1], sys.argv[3:]
    steps = [shlex.split(line) for line in sys.stdin.read().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    out = bytearray()
    cursor = 0
    status = None
    log = open(os.path.join(outdir, "transcript"), "wb")

    def pump(wait):
        """Read what the command wrote; False once the terminal is closed."""
        r, _, _ = select.select([fd], [], [], wait)
        if not r:
            return True
        try:
            data = os.read(fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        out.extend(data)
        log.write(data)
        log.flush()
        return True

    def wait_for(text, what):
        nonlocal cursor
        end = time.monotonic() + TIMEOUT
        while True:
            i = out.find(text, cursor)
            if i >= 0:
                start = cursor
                cursor = i + len(text)
                return bytes(out[start:i])
            if time.monotonic() > end:
                die("%s: %r not seen in %g s" % (what, text, TIMEOUT), out)
            if not pump(1.0):
                # the command ended: what it wrote is all there is
                i = out.find(text, cursor)
                if i < 0:
                    die("%s: %r not seen before the command ended" % (what, text), out)

    def proc_state():
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    def sigint_pending():
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(("SigPnd:", "ShdPnd:")) and \
                        int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)):
                    return True
        return False

    for st in steps:
        op, args = st[0], [codecs.decode(a, "unicode_escape").encode("latin-1") for a in st[1:]]
        if op == "expect":
            wait_for(args[0], "expect")
        elif op == "capture":
            got = wait_for(args[1], "capture " + st[1])
            with open(os.path.join(outdir, st[1]), "wb") as f:
                f.write(got)
        elif op == "output":
            end = time.monotonic() + TIMEOUT
            while len(out) <= cursor:
                if time.monotonic() > end or not pump(1.0):
                    die("output: nothing came", out)
        elif op == "send":
            os.write(fd, args[0])
        elif op == "intr":
            os.kill(pid, signal.SIGSTOP)
            end = time.monotonic() + TIMEOUT
            while proc_state() != "T":
                if time.monotonic() > end:
                    die("intr: the command did not stop", out)
                pump(0.01)
            os.write(fd, b"\x03")    # VINTR, the terminal's default interrupt character
            while not sigint_pending():
                if time.monotonic() > end:
                    die("intr: no SIGINT pending after typing ^C", out)
                pump(0.01)
            os.kill(pid, signal.SIGCONT)
        elif op == "exit":
            end = time.monotonic() + TIMEOUT
            while True:
                wpid, wst = os.waitpid(pid, os.WNOHANG)
                if wpid:
                    status = os.waitstatus_to_exitcode(wst)
                    break
                if time.monotonic() > end:
                    die("exit: the command did not end", out)
                pump(0.2)
            while pump(0.05):
                pass
            if status != int(st[1]):
                die("exit: status %d, expected %s" % (status, st[1]), out)
        else:
            die("unknown step %r" % op, out)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    log.close()


main()
