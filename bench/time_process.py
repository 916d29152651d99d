#!/usr/bin/python3
"""Times one process from its start to its exit, and nothing else: for bench/mmc_vs_simpy.sh.

    bench/time_process.py OUT ERR command [args...]

Starts `command` (posix_spawn, stdout to OUT, stderr to ERR), waits for it with wait4 and prints
"wall_seconds max_rss_kb cpu_seconds": the monotonic clock from just before the spawn to just
after the wait, the child's peak resident set and its user + system time (from the kernel's
rusage of that child alone). This interpreter's own start is outside the span. Exits with the
child's status (1 if it died of a signal).

Why not `/usr/bin/time` between two `date` calls, as before: that span held three more processes
(time, its child's exec, the second date), 20 ms on the 2-core VM here even around /bin/true, a
seventh of an M/M/c `lagpilot sim` and a thousandth of SimPy's run, so the ratio was understated.
"""
import os
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: time_process.py OUT ERR command [args...]")
    out_path, err_path, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    actions = [(os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, err, 2)]
    t0 = time.monotonic_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    t1 = time.monotonic_ns()
    print(f"{(t1 - t0) / 1e9:.4f} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime:.3f}")
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
