#!/usr/bin/env python3
"""Two idem builds taking turns on the same commands, the order swapped
every turn, so a busy machine weighs on both alike; prints the median and
the least time of each build per command.

    bench/ab.py BEFORE_BIN THIS_BIN CONFIG TURNS 'status fct' 'run fct --yes'
"""
import statistics
import subprocess
import sys
import time

before, this, config, turns, *commands = sys.argv[1:]
times = {}
for turn in range(int(turns)):
    builds = [("before", before), ("this", this)]
    for name, binary in builds if turn % 2 == 0 else builds[::-1]:
        for command in commands:
            start = time.perf_counter()
            subprocess.run([binary, "--config", config, *command.split()],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times.setdefault((command, name), []).append(time.perf_counter() - start)
print("| command | build | median | least |")
print("|---|---|---|---|")
for (command, name), t in sorted(times.items()):
    print(f"| `idem {command}` | {name} | {statistics.median(t):.4f} s | {min(t):.4f} s |")
