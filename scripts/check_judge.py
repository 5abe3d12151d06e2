#!/usr/bin/env python3
"""`dynamiccl replay` against the independent judge (../shared/tools/judge.py) on every dataset of
../shared/data: the same plugin library, profile, trust level and hardware variables; per point the
decision (what NCCL runs) and chosen/default must be the same. Prints one agree/disagree line per
dataset, profile and system, and the points that differ.
usage: check_judge.py BUILD_DIR SHARED_DIR [--out DIR]
Profiles: each dataset's simulated best per size bucket (`replay --make-profiles`, unverified, judged
with --trust all), and a profile tuned from the L40S measurements (`tune --backend replay`, one per
shape, merged), judged with the plugin's default trust and with --trust all.
"""
import argparse, csv, json, math, os, re, subprocess, sys, tempfile


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def slug(s):
    return "".join(c.lower() if c.isalnum() else "-" for c in s[:24])


def systems_of(data):
    seen = []
    for r in csv.DictReader(open(data)):
        if r["system"] not in seen:
            seen.append(r["system"])
    return seen


def replay(bin_, data, system, profile, trust, out):
    p = run([bin_, "replay", "--data", data, "--system", system, "--profile", profile, "--trust", trust, "--json", out])
    if p.returncode != 0:
        return None, p.stderr.strip()
    env = []
    m = re.search(r"hardware: the data's, as the plugin would probe it there: (.*)", p.stdout)
    if m:
        env = m.group(1).split()
    return json.load(open(out)), env


def judge(judge_py, lib, data, system, profile, trust, env, out):
    args = [sys.executable, judge_py, lib, data, "--system", system, "--json", out,
            "--env", f"DYNAMICCL_PROFILE={profile}", "--env", f"DYNAMICCL_TRUST={trust}",
            "--env", "DYNAMICCL_RECORD=0",
            # One process plays one rank: no other rank publishes its inputs (as in the harness).
            "--env", "DYNAMICCL_INPUTS_CHECK=0"]
    for kv in env:
        args += ["--env", kv]
    p = run(args)
    if not os.path.exists(out):
        return [], p.stdout.strip().splitlines()[-1:] or [p.stderr.strip()]
    return json.load(open(out)), []


def channel_points(data, system):
    """Points whose forced rows force a channel count (NCCL_MIN_NCHANNELS=... in the note): replay judges
    a decision there at its own count, the judge (its README: channels are not judged) pools the counts."""
    out = set()
    for r in csv.DictReader(open(data)):
        if system in r["system"] and r["algo"] != "default" and r["nchannels"] and \
                re.search(r"NCCL_(MIN_|MAX_)?NCHANNELS=", r["source_note"]):
            out.add((r["collective"], int(r["nranks"]), int(r["nnodes"]), int(r["bytes"])))
    return out


def compare(ours, theirs, channels=frozenset()):
    """Points the judge judged (default and another arm measured): same decision and chosen/default.
    At `channels` points only the decision is compared (the judge's figure pools channel counts)."""
    mine = {(r["coll"], r["nranks"], r["nnodes"], r["bytes"]): r for r in ours}
    agree, differ, approx = 0, [], []
    pooled = 0
    for t in theirs:
        k = (t["coll"], t["nranks"], t["nnodes"], t["bytes"])
        m = mine.get(k)
        if k in channels:
            # Replay leaves a decision at NCCL's own count unjudged where rows force counts; the judge
            # reads its pair's pooled rows. Same decision is all the two can agree on.
            same = m is None or ((t["choice"] == "(NCCL's own)") == (not m["forced"]) and
                                 (not m["forced"] or t["choice"] == m["choice"].split(" ")[0]))
            if same:
                pooled += 1
            else:
                differ.append(f"{t['coll']} {t['nranks']}r/{t['nnodes']}n {t['bytes']} B: judge {t['choice']}; "
                              f"replay {m['choice']}{' forced' if m['forced'] else ''}")
            continue
        if "chosen_us" not in t:
            # The choice was never measured there: agreement only if replay did not judge it either.
            if m is not None and "chosen_us" in m and m["choice"] == t["choice"]:
                differ.append(f"{t['coll']} {t['nranks']}r/{t['nnodes']}n {t['bytes']} B: judge could not judge "
                              f"{t['choice']}, replay did")
            continue
        if m is None:
            differ.append(f"{k}: not judged by dynamiccl replay")
            continue
        same_choice = (t["choice"] == "(NCCL's own)") == (not m["forced"]) and \
                      (not m["forced"] or t["choice"] == m["choice"])
        same_ratio = "vs_default" in m and abs(math.log(m["vs_default"] / t["vs_default"])) < 1e-3
        if same_choice and same_ratio:
            agree += 1
        elif same_choice and t["how"].startswith("half-forced"):
            # The configuration was never forced whole: the judge takes the first half-forced row in
            # file order, replay the arm(s) NCCL's model resolves to it. Same decision; the figure differs.
            approx.append(f"{t['coll']} {t['nranks']}r/{t['nnodes']}n {t['bytes']} B: {t['choice']}: judge "
                          f"{t['how']} c/def {t['vs_default']:.4f}; replay c/def {m['vs_default']:.4f}")
        else:
            differ.append(f"{t['coll']} {t['nranks']}r/{t['nnodes']}n {t['bytes']} B: judge {t['choice']} ({t['how']}) "
                          f"c/def {t['vs_default']:.4f}; replay {m['choice']}{' forced' if m['forced'] else ''} "
                          f"c/def {m.get('vs_default', float('nan')):.4f}")
    # Points only replay judges against a default: none may have a measured alternative the judge skipped.
    judged = {(t["coll"], t["nranks"], t["nnodes"], t["bytes"]) for t in theirs}
    for k, m in mine.items():
        if k not in judged and m.get("arms", 0) >= 2 and "default_us" in m:
            differ.append(f"{k}: replay judged a point with {m['arms']} arms the judge did not")
    return agree, differ, approx, pooled


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build"); ap.add_argument("shared")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    bin_ = os.path.join(a.build, "offline", "dynamiccl")
    lib = os.path.join(a.build, "plugin", "libnccl-tuner-dynamiccl.so")
    judge_py = os.path.join(a.shared, "tools", "judge.py")
    out = a.out or tempfile.mkdtemp(prefix="check-judge-")
    os.makedirs(out, exist_ok=True)
    datasets = sorted(d for d in os.listdir(os.path.join(a.shared, "data"))
                      if os.path.exists(os.path.join(a.shared, "data", d, "normalized.csv")))
    # The measured profile: tuned from the L40S sweeps, one per shape, merged.
    l40s = os.path.join(a.shared, "data", "l40s-pcie-cs244c", "normalized.csv")
    measured = os.path.join(out, "l40s-measured.json")
    if os.path.exists(l40s):
        rules, doc = [], None
        for n in (2, 4):
            pf = os.path.join(out, f"l40s-{n}r.json")
            p = run([bin_, "tune", "--backend", "replay", "--dataset", l40s, "--system", "L40S", "--nranks", str(n),
                     "--no-progress", "-o", os.path.join(out, f"l40s-{n}r.report.json"), "--profile", pf])
            if p.returncode != 0:
                print("tune failed:", p.stderr.strip()); return 2
            doc = json.load(open(pf)); rules += doc.get("rules", [])
        doc["rules"] = rules; doc["name"] = "tuned from l40s-pcie-cs244c (replay)"
        json.dump(doc, open(measured, "w"), indent=1)
    failures = 0
    for d in datasets:
        data = os.path.join(a.shared, "data", d, "normalized.csv")
        prof_dir = os.path.join(out, "sim-" + d)
        p = run([bin_, "replay", "--data", data, "--make-profiles", prof_dir])
        if p.returncode != 0:
            print(f"{d}: replay --make-profiles failed: {p.stderr.strip()}"); failures += 1; continue
        for system in systems_of(data):
            cases = [("simulated best (unverified)", os.path.join(prof_dir, f"{d}--{slug(system)}.sim-best.json"), "all")]
            if d == "l40s-pcie-cs244c" and "L40S" in system:
                cases += [("tuned from measurements", measured, "verified"), ("tuned from measurements", measured, "all")]
            for label, profile, trust in cases:
                tag = f"{d} [{system[:40]}] {label}, trust {trust}"
                base = os.path.join(out, f"{d}-{slug(system)}-{slug(label)}-{trust}")
                ours, env = replay(bin_, data, system, profile, trust, base + ".replay.json")
                if ours is None:
                    print(f"DISAGREE {tag}: replay failed: {env}"); failures += 1; continue
                theirs, note = judge(judge_py, lib, data, system, profile, trust, env, base + ".judge.json")
                agree, differ, approx, pooled = compare(ours, theirs, channel_points(data, system))
                forced = sum(1 for r in ours if r["forced"])
                verdict = "agree" if not differ else "DISAGREE"
                failures += bool(differ)
                what = f"{agree + len(approx)} points judged by both, same decision at all" + \
                       (f"; {len(approx)} of them through half-forced rows, figure approximate in the judge" if approx else "") + \
                       (f"; {pooled} more where the rows force channel counts: same decision (the judge pools the "
                        f"counts, replay judges each)" if pooled else "") \
                       if theirs else "no point with NCCL's default and another arm (" + \
                       (note[0] if note else "judge judged none") + ")"
                print(f"{verdict:8} {tag}: {what}; replay forced {forced} of {len(ours)} points")
                for line in differ[:8]:
                    print("         ", line)
                for line in approx[:3]:
                    print("          approximate:", line)
    print(f"files in {out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
