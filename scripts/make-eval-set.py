#!/usr/bin/env python3
"""Generates the control-quality evaluation set: traces/eval/{train,test}/*.csv.

Every file is a `rate` trace (`timestamp,count`: messages in the bin that starts at the epoch
timestamp), meant to be replayed with `--peak-load 1.2` (see docs/control-quality.md), so only
the shape matters, not the scale.

Sources: the raw traces in traces/ (byte-for-byte copies of public data files; see
traces/SOURCES.md for origins and licences), sliced, time-compressed, resampled and given
multiplicative noise; plus synthetic shapes (steps up and down, ramps, a sawtooth, flash crowds,
periodic bursts, slow drift, on-off, a noisy constant). Every family has one member in the train
split and another (different slice, parameters and noise) in the test split, so a policy tuned on
train meets new traces of each kind on test.

Deterministic: one fixed seed, Python's own Mersenne Twister (random.Random), no third-party
modules; the same script gives byte-identical files. Usage:
    scripts/make-eval-set.py [--out traces/eval] [--seed 11] [--check]
--check regenerates into memory and fails (exit 1) if a committed file differs.
"""

import argparse
import bisect
import calendar
import functools
import math
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW = os.path.join(ROOT, "traces")
EPOCH0 = 1_700_000_000  # synthetic traces start here (2023-11-14); any epoch would do


def parse_time(text):
    text = text.strip().strip('"')
    try:
        return float(text)
    except ValueError:
        pass
    date, _, clock = text.replace("T", " ").rstrip("Z").partition(" ")
    frac = 0.0
    if "." in clock:
        clock, f = clock.split(".", 1)
        frac = float("0." + f)
    fmt = "%Y-%m-%d %H:%M:%S" if clock else "%Y-%m-%d"
    t = time.strptime((date + " " + clock).strip(), fmt)
    return calendar.timegm(t) + frac


@functools.lru_cache(maxsize=None)
def read_counts(name):
    """(epoch seconds, value) rows of a two-column raw trace."""
    rows = []
    with open(os.path.join(RAW, name), encoding="utf-8") as f:
        next(f)
        for line in f:
            line = line.strip()
            if not line:
                continue
            ts, value = line.split(",")[:2]
            rows.append((parse_time(ts), float(value)))
    return tuple(rows)


def read_prometheus(name):
    rows = []
    with open(os.path.join(RAW, name), encoding="utf-8") as f:
        next(f)
        for line in f:
            parts = line.strip().split(",")
            if len(parts) < 3 or parts[2].lower() == "nan":
                continue
            rows.append((float(parts[0]), float(parts[2])))
    return rows


def read_events(name):
    times = []
    with open(os.path.join(RAW, name), encoding="utf-8") as f:
        next(f)
        for line in f:
            line = line.strip()
            if line:
                times.append(parse_time(line.split(",")[0]))
    return times


def slice_rows(rows, start, end):
    return [(t, v) for t, v in rows if start <= t < end]


def to_rates(rows):
    """Counts per bin -> (start, per-second rate) with the bin width of the first step."""
    step = rows[1][0] - rows[0][0]
    return [(t, v / step) for t, v in rows], step


def resample(rates, step, new_step):
    """Piecewise-constant rate `rates` (bin width `step`) averaged into bins of `new_step`."""
    start = rates[0][0]
    end = rates[-1][0] + step
    out = []
    t = start
    i = 0
    while t < end - 1e-9:
        b_end = min(t + new_step, end)
        total = 0.0
        while i < len(rates) and rates[i][0] + step <= t:
            i += 1
        j = i
        while j < len(rates) and rates[j][0] < b_end:
            lo = max(t, rates[j][0])
            hi = min(b_end, rates[j][0] + step)
            if hi > lo:
                total += rates[j][1] * (hi - lo)
            j += 1
        out.append(total / (b_end - t))
        t += new_step
    return out


def noisy(values, rng, cv, smooth=0.0):
    """Multiplicative noise: lognormal with coefficient of variation `cv`, optionally
    AR(1)-correlated (smooth in [0, 1): the fraction of the last bin's noise kept)."""
    out = []
    z = 0.0
    sigma = math.sqrt(math.log(1.0 + cv * cv))
    for v in values:
        z = smooth * z + math.sqrt(1.0 - smooth * smooth) * rng.gauss(0.0, 1.0)
        out.append(max(0.0, v * math.exp(sigma * z - sigma * sigma / 2)))
    return out


# ----------------------------------------------------------------------------------------------
# Real traces, transformed. Each returns (per-second rates, bin seconds, provenance text).

def wc98_day(day, hours, compress, bin_seconds, rng, cv):
    rows = read_counts("wc98_invocation_count.csv")
    start = parse_time(day)
    rates, step = to_rates(slice_rows(rows, start, start + hours * 3600))
    # compress: the slice's time runs `compress` times faster (rates scale up, the scale is
    # irrelevant under --peak-load); then resample to the output bin.
    comp = [(start + (t - start) / compress, r * compress) for t, r in rates]
    values = noisy(resample(comp, step / compress, bin_seconds), rng, cv)
    return values, bin_seconds, (
        f"traces/wc98_invocation_count.csv from {day} GMT, {hours} h, time compressed "
        f"{compress}x, {bin_seconds} s bins, lognormal noise cv {cv}")


def wc98_ramp(first_day, days, compress, bin_seconds, rng, cv):
    rows = read_counts("wc98_invocation_count.csv")
    start = parse_time(first_day)
    rates, step = to_rates(slice_rows(rows, start, start + days * 86400))
    comp = [(start + (t - start) / compress, r * compress) for t, r in rates]
    values = noisy(resample(comp, step / compress, bin_seconds), rng, cv)
    return values, bin_seconds, (
        f"traces/wc98_invocation_count.csv from {first_day} GMT, {days} days (the slow "
        f"ramp before the tournament), time compressed {compress}x, {bin_seconds} s bins, "
        f"lognormal noise cv {cv}")


def nab(name, first_day, days, compress, bin_seconds, rng, cv, smooth):
    rows = read_counts(name)
    start = parse_time(first_day)
    rates, step = to_rates(slice_rows(rows, start, start + days * 86400))
    comp = [(start + (t - start) / compress, r * compress) for t, r in rates]
    values = noisy(resample(comp, step / compress, bin_seconds), rng, cv, smooth)
    return values, bin_seconds, (
        f"traces/{name} from {first_day}, {days} days, time compressed {compress}x, "
        f"{bin_seconds} s bins, lognormal noise cv {cv} (AR(1) {smooth})")


def azure(stretch, bin_seconds, first_minute, minutes):
    times = read_events("azure_AzureLLMInferenceTrace_code.csv")
    t0 = math.floor(times[0] / 60) * 60 + first_minute * 60
    t1 = t0 + minutes * 60
    n = int(minutes * 60 * stretch / bin_seconds)
    counts = [0] * n
    for t in times:
        if t0 <= t < t1:
            k = int((t - t0) * stretch / bin_seconds)
            if k < n:
                counts[k] += 1
    values = [c / bin_seconds for c in counts]
    return values, bin_seconds, (
        f"traces/azure_AzureLLMInferenceTrace_code.csv (one row per request), minutes "
        f"{first_minute}-{first_minute + minutes}, time stretched {stretch}x, counted in "
        f"{bin_seconds} s bins (the requests are the noise)")


def espa(first_hour, hours, compress, bin_seconds, rng, cv):
    rows = read_prometheus("espa_q1_cosine_HPA50_input_rate.csv")
    start = rows[0][0] + first_hour * 3600
    part = [(t, v) for t, v in rows if start <= t < start + hours * 3600]
    step = 15.0
    comp = [(start + (t - start) / compress, r * compress) for t, r in part]
    values = noisy(resample(comp, step / compress, bin_seconds), rng, cv)
    return values, bin_seconds, (
        f"traces/espa_q1_cosine_HPA50_input_rate.csv (a Prometheus rate), hours "
        f"{first_hour}-{first_hour + hours}, time compressed {compress}x, {bin_seconds} s "
        f"bins, lognormal noise cv {cv}")


# ----------------------------------------------------------------------------------------------
# Synthetic shapes: level(t) in [0, 1] (1 = the peak) sampled per bin, then noise.

def synthetic(kind, seconds, bin_seconds, rng, cv, **p):
    n = int(seconds / bin_seconds)
    out = []
    walk = 0.0
    for k in range(n):
        t = k * bin_seconds
        if kind == "steps":  # a staircase of levels, each held `hold` seconds
            levels = p["levels"]
            level = levels[min(int(t / p["hold"]), len(levels) - 1)]
        elif kind == "ramp":  # up from lo to hi over `up` s, hold, down over `down` s
            lo, hi, up, hold, down = p["lo"], p["hi"], p["up"], p["hold"], p["down"]
            if t < p["start"]:
                level = lo
            elif t < p["start"] + up:
                level = lo + (hi - lo) * (t - p["start"]) / up
            elif t < p["start"] + up + hold:
                level = hi
            elif t < p["start"] + up + hold + down:
                level = hi - (hi - lo) * (t - p["start"] - up - hold) / down
            else:
                level = lo
        elif kind == "sawtooth":  # slow rise over `period`, sudden drop
            phase = (t % p["period"]) / p["period"]
            level = p["lo"] + (p["hi"] - p["lo"]) * phase
        elif kind == "flash":  # base, a jump to `peak` at `at`, exponential decay `tau`
            level = p["base"]
            for at, peak, tau in p["crowds"]:
                if t >= at:
                    level += (peak - p["base"]) * math.exp(-(t - at) / tau)
        elif kind == "bursts":  # base plus a square burst of `width` s every `period` s
            level = p["base"] + (p["peak"] - p["base"]) * ((t % p["period"]) < p["width"])
        elif kind == "drift":  # slow sinusoid plus a bounded random walk
            walk = max(-0.15, min(0.15, walk + rng.gauss(0.0, p["walk"])))
            level = p["mean"] + p["amp"] * math.sin(2 * math.pi * t / p["period"]) + walk
        elif kind == "onoff":  # exponential on and off periods
            if k == 0 or t >= p["_next"]:
                p["_on"] = not p.get("_on", False) if k else True
                p["_next"] = t + rng.expovariate(1.0 / (p["on"] if p["_on"] else p["off"]))
            level = p["high"] if p["_on"] else p["low"]
        elif kind == "constant":  # a burst at the peak for `burst` s, then a constant level
            level = 1.0 if t < p["burst"] else p["level"]
        else:
            raise ValueError(kind)
        out.append(max(level, 0.0))
    values = noisy(out, rng, cv)
    shown = {k: v for k, v in p.items() if not k.startswith("_")}
    return values, bin_seconds, (
        f"synthetic {kind} {shown}, {seconds / 3600:g} h, {bin_seconds} s bins, "
        f"lognormal noise cv {cv}")


# ----------------------------------------------------------------------------------------------

def recipes(rng):
    """(split, name, thunk) for every trace. Names say the family; thunks draw from rng in
    order, so the order of this list is part of the set's definition."""
    H = 3600
    return [
        # World Cup 98: match days with their flash crowds, at (or near) their own pace.
        ("train", "wc98_semifinal", lambda: wc98_day("1998-07-07 12:00:00", 12, 1, 60, rng, 0.05)),
        ("test", "wc98_final", lambda: wc98_day("1998-07-12 12:00:00", 12, 1, 60, rng, 0.05)),
        ("train", "wc98_group_day", lambda: wc98_day("1998-06-24 00:00:00", 24, 2, 30, rng, 0.05)),
        ("test", "wc98_round16_day", lambda: wc98_day("1998-06-30 00:00:00", 24, 2, 30, rng, 0.05)),
        ("train", "wc98_ramp", lambda: wc98_ramp("1998-05-01 00:00:00", 10, 12, 60, rng, 0.05)),
        ("test", "wc98_ramp_late", lambda: wc98_ramp("1998-05-25 00:00:00", 10, 12, 60, rng, 0.05)),
        # NYC taxi: two weeks of a strong daily cycle, compressed 6x (a day in 4 h), with noise.
        ("train", "taxi_two_weeks", lambda: nab("nab_nyc_taxi.csv", "2014-09-01", 14, 6, 60, rng, 0.10, 0.5)),
        ("test", "taxi_holidays", lambda: nab("nab_nyc_taxi.csv", "2014-11-20", 14, 6, 60, rng, 0.10, 0.5)),
        # Tweets about AAPL: a week of bursts on a diurnal base, compressed 4x.
        ("train", "tweets_week", lambda: nab("nab_Twitter_volume_AAPL.csv", "2015-03-02", 7, 4, 60, rng, 0.05, 0.0)),
        ("test", "tweets_spike_week", lambda: nab("nab_Twitter_volume_AAPL.csv", "2015-03-28", 7, 4, 60, rng, 0.05, 0.0)),
        # Azure LLM code completions: bursty on/off, the first and the second half hour.
        ("train", "azure_first_half", lambda: azure(2, 10, 0, 28)),
        ("test", "azure_second_half", lambda: azure(2, 10, 28, 28)),
        # ESPA cosine input (a lab workload behind a Kafka consumer), at its own pace.
        ("train", "espa_cosine_first", lambda: espa(0.0, 1.3, 1, 15, rng, 0.05)),
        ("test", "espa_cosine_second", lambda: espa(1.3, 1.3, 1, 15, rng, 0.05)),
        # Synthetic shapes.
        ("train", "steps_up_down", lambda: synthetic("steps", 6 * H, 10, rng, 0.05, levels=[0.3, 0.8, 0.4, 0.9, 0.2, 0.6], hold=3600)),
        ("test", "steps_staircase", lambda: synthetic("steps", 6 * H, 10, rng, 0.05, levels=[0.2, 0.45, 0.7, 0.95, 0.6, 0.25], hold=3600)),
        ("train", "ramp_slow", lambda: synthetic("ramp", 6 * H, 10, rng, 0.05, lo=0.2, hi=0.9, start=1800, up=7200, hold=3600, down=7200)),
        ("test", "ramp_fast", lambda: synthetic("ramp", 4 * H, 10, rng, 0.05, lo=0.15, hi=1.0, start=1800, up=1200, hold=3600, down=1800)),
        ("train", "sawtooth_1h", lambda: synthetic("sawtooth", 6 * H, 10, rng, 0.05, lo=0.2, hi=0.9, period=3600)),
        ("test", "sawtooth_30min", lambda: synthetic("sawtooth", 4 * H, 10, rng, 0.05, lo=0.25, hi=1.0, period=1800)),
        ("train", "flash_crowd", lambda: synthetic("flash", 4 * H, 10, rng, 0.05, base=0.2, crowds=[[3600, 1.0, 1200]])),
        ("test", "flash_crowds_two", lambda: synthetic("flash", 4 * H, 10, rng, 0.05, base=0.25, crowds=[[2400, 0.8, 600], [9000, 1.0, 1800]])),
        ("train", "bursts_periodic", lambda: synthetic("bursts", 4 * H, 10, rng, 0.05, base=0.3, peak=0.85, period=1800, width=300)),
        ("test", "bursts_short", lambda: synthetic("bursts", 4 * H, 10, rng, 0.05, base=0.2, peak=1.0, period=1200, width=120)),
        ("train", "drift_slow", lambda: synthetic("drift", 6 * H, 10, rng, 0.05, mean=0.5, amp=0.25, period=6 * H, walk=0.01)),
        ("test", "drift_wander", lambda: synthetic("drift", 6 * H, 10, rng, 0.05, mean=0.55, amp=0.2, period=4 * H, walk=0.02)),
        ("train", "onoff", lambda: synthetic("onoff", 4 * H, 10, rng, 0.05, high=0.8, low=0.1, on=600, off=900)),
        ("test", "onoff_fast", lambda: synthetic("onoff", 4 * H, 10, rng, 0.05, high=0.9, low=0.15, on=240, off=480)),
        ("train", "constant_55", lambda: synthetic("constant", 2 * H, 10, rng, 0.0, level=0.55 / 1.2, burst=60)),
        ("test", "constant_70", lambda: synthetic("constant", 2 * H, 10, rng, 0.0, level=0.70 / 1.2, burst=60)),
    ]


def render(values, bin_seconds):
    lines = ["timestamp,count"]
    for k, v in enumerate(values):
        lines.append(f"{EPOCH0 + round(k * bin_seconds)},{v * bin_seconds:.1f}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "traces", "eval"))
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    files = {}
    index = ["# The control-quality evaluation set", "",
             f"Generated by `scripts/make-eval-set.py --seed {args.seed}`; do not edit by hand "
             "(rerun the script). Replay with `--peak-load 1.2`.", "",
             "| split | file | bins | source and transformation |", "|---|---|---|---|"]
    for split, name, make in recipes(rng):
        values, bin_seconds, how = make()
        if max(values) <= 0:
            raise SystemExit(f"{name}: the trace is empty")
        path = os.path.join(split, name + ".csv")
        files[path] = render(values, bin_seconds)
        index.append(f"| {split} | `{path}` | {len(values)} | {how} |")
    files["README.md"] = "\n".join(index) + "\n"
    differs = []
    for rel, text in files.items():
        full = os.path.join(args.out, rel)
        if args.check:
            try:
                with open(full, encoding="utf-8") as f:
                    if f.read() != text:
                        differs.append(rel)
            except FileNotFoundError:
                differs.append(rel)
        else:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
    if args.check:
        if differs:
            print("differs from the script's output: " + ", ".join(differs), file=sys.stderr)
            return 1
        print(f"{len(files)} files match")
    else:
        print(f"wrote {len(files)} files under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
