#!/usr/bin/env python3
"""Send the bench's hook payloads through the hook commands an install wrote.

Usage: feed-hooks.py SETTINGS HOOKS OUT_JSON

SETTINGS is the Claude Code settings.json that `harnery install claude-code`
wrote in a scratch HOME; HOOKS the payloads from make-sessions.py. Each
payload whose event the settings register is given, on stdin, to every
command registered for it (its program with its `args`, or a command
line through /bin/sh), as Claude Code runs hook commands, in the order Claude Code sent them; the environment (HARNERY_HOME
included) is this process's. A command that exits non-zero stops the feed
with its payload's line number and stderr. Writes to OUT_JSON the counts of
payloads sent and skipped (by event), and the wall seconds of the feed and
the median and 99th percentile milliseconds of one hook run.
"""

import json
import subprocess
import sys
import time


def die(msg):
    sys.stderr.write(f"feed-hooks.py: {msg}\n")
    sys.exit(2)


def commands(settings_path):
    try:
        with open(settings_path) as f:
            settings = json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot read the install's settings {settings_path}: {e}")
    out = {}
    for event, groups in (settings.get("hooks") or {}).items():
        for group in groups:
            for hook in group.get("hooks", []):
                if hook.get("type") == "command" and hook.get("command"):
                    # With `args`, Claude Code runs the program itself; without,
                    # the command line through a shell.
                    if "args" in hook:
                        argv = [hook["command"], *map(str, hook["args"])]
                    else:
                        argv = ["/bin/sh", "-c", hook["command"]]
                    out.setdefault(event, []).append(argv)
    if not out:
        die(f"{settings_path} registers no hook command")
    return out


def main():
    if len(sys.argv) != 4:
        die("usage: feed-hooks.py SETTINGS HOOKS OUT_JSON")
    by_event = commands(sys.argv[1])
    sent, skipped, runs = {}, {}, []
    t0 = time.monotonic()
    with open(sys.argv[2]) as f:
        for n, line in enumerate(f, 1):
            item = json.loads(line)
            event, payload = item["event"], item["payload"].encode()
            if event not in by_event:
                skipped[event] = skipped.get(event, 0) + 1
                continue
            for argv in by_event[event]:
                t = time.monotonic()
                p = subprocess.run(argv, input=payload,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                runs.append(time.monotonic() - t)
                if p.returncode != 0:
                    die(f"{sys.argv[2]}:{n}: {event} hook `{' '.join(argv)}` exited {p.returncode}: "
                        f"{p.stderr.decode(errors='replace').strip()[:500]}")
            sent[event] = sent.get(event, 0) + 1
    wall = time.monotonic() - t0
    runs.sort()
    summary = {
        "sent": sent, "skipped": skipped, "payloads": sum(sent.values()), "wall_s": round(wall, 2),
        "median_ms": round(runs[len(runs) // 2] * 1000, 2) if runs else None,
        "p99_ms": round(runs[int(len(runs) * 0.99)] * 1000, 2) if runs else None,
    }
    with open(sys.argv[3], "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main()
