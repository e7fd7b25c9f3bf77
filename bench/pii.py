"""``python -m bench.pii``: the PII cascade on the labelled synthetic corpus (``bench.pii_corpus``).

Prints stage-1 cost per clean observation (mean, p50, p99), stage-2 throughput and latency on the real spaCy
back-end, the cascade's precision / recall / F1 overall, per category and per stage, the fraction of texts
stopping at each stage, and the machine. Stage 3 is the LLM when HIVEMEM_LLM_URL is set, else the local rule.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections import Counter, defaultdict
from collections.abc import Sequence

from bench.cpu import cpu_model
from bench.pii_corpus import CorpusItem, build
from governance.pii import PiiPolicy, PiiVerdict, regex_stage, scan
from inference.ner import SpacyNer
from inference.pii_llm import classifier_from_env


def pct(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def stage1_cost(texts: list[str], repeat: int) -> list[float]:
    """Stage-1 time in ms of every call: ``repeat`` calls per text, after one warm-up pass."""
    for t in texts:
        regex_stage.scan(t)
    out = []
    for _ in range(repeat):
        for t in texts:
            t0 = time.perf_counter_ns()
            regex_stage.scan(t)
            out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def stage2_speed(ner: SpacyNer, texts: list[str]) -> tuple[float, list[float], float]:
    """(texts/s one at a time, per-text ms, texts/s in batches of 32)."""
    lat = []
    t0 = time.perf_counter()
    for t in texts:
        t1 = time.perf_counter()
        ner.entities(t)
        lat.append((time.perf_counter() - t1) * 1000)
    single = len(texts) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for i in range(0, len(texts), 32):
        ner.entities_batch(texts[i : i + 32])
    return single, lat, len(texts) / (time.perf_counter() - t0)


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def report(items: list[CorpusItem], verdicts: list[PiiVerdict], latency_ms: list[float]) -> None:
    tp = sum(it.pii and not v.clean for it, v in zip(items, verdicts, strict=True))
    fp = sum(not it.pii and not v.clean for it, v in zip(items, verdicts, strict=True))
    fn = sum(it.pii and v.clean for it, v in zip(items, verdicts, strict=True))
    p, r, f1 = prf(tp, fp, fn)
    print(f"\ncascade on {len(items)} texts ({sum(i.pii for i in items)} PII): precision {p:.3f}  recall {r:.3f}  "
          f"F1 {f1:.3f}  (tp {tp}, fp {fp}, fn {fn})")  # fmt: skip
    print(f"cascade latency per text: mean {sum(latency_ms) / len(latency_ms):.2f} ms  p50 {pct(latency_ms, 0.5):.2f}"
          f"  p99 {pct(latency_ms, 0.99):.2f} ms")  # fmt: skip

    by_cat: dict[str, list[bool]] = defaultdict(list)
    expected_stage: dict[str, str] = {}
    for it, v in zip(items, verdicts, strict=True):
        by_cat[it.category].append(not v.clean)
        expected_stage[it.category] = it.stage
    print("\nper category (positives: recall; negatives: share wrongly flagged)")
    for cat in sorted(by_cat, key=lambda c: (expected_stage[c] == "none", c)):
        flags = by_cat[cat]
        if expected_stage[cat] == "none":
            print(f"  {cat:18} n={len(flags):4}  false-positive rate {sum(flags) / len(flags):6.1%}")
        else:
            recall = sum(flags) / len(flags)
            print(f"  {cat:18} n={len(flags):4}  recall {recall:6.1%}   (expected at {expected_stage[cat]})")

    print("\nper stage that flagged (precision of its flags; recall over the PII it is meant to catch)")
    meant = {"regex": ("regex",), "ner": ("ner",), "llm": ("implicit",), "local-rule": ("implicit",)}
    for stage in ("regex", "ner", "llm", "local-rule"):
        flagged = [(it, v) for it, v in zip(items, verdicts, strict=True) if v.stage_hit == stage and not v.clean]
        own = [it for it in items if it.stage in meant[stage]]
        caught = sum(1 for it, v in zip(items, verdicts, strict=True) if it.stage in meant[stage] and not v.clean)
        if flagged or (own and stage != "llm"):
            prec = sum(it.pii for it, _ in flagged) / len(flagged) if flagged else float("nan")
            print(f"  {stage:10} flagged {len(flagged):4}  precision {prec:6.1%}   "
                  f"recall on its own kind {caught}/{len(own)}")  # fmt: skip

    print("\nwhere texts stopped (last stage run)")
    for group, sel in (("all", lambda it: True), ("clean", lambda it: not it.pii), ("PII", lambda it: it.pii)):
        stops = Counter(v.stages_run[-1] for it, v in zip(items, verdicts, strict=True) if sel(it))
        total = sum(stops.values())
        shares = "  ".join(f"{s} {stops[s] / total:6.1%}" for s in ("regex", "ner", "llm", "local-rule") if stops[s])
        print(f"  {group:6} {shares}")
    reasons = Counter(r for v in verdicts for part in v.escalation.split(";") for r in part[3:].split("+")
                      if part.startswith("s2="))  # fmt: skip
    print("  stage-2 triggers:", ", ".join(f"{k} {n}" for k, n in reasons.most_common()))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.pii", description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=20, help="stage-1 timing calls per clean text")
    ap.add_argument("--policy", choices=("cascade", "always"), default="cascade")
    args = ap.parse_args(argv)

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    items = build(args.seed)
    clean_texts = [it.text for it in items if not it.pii]
    print(f"corpus: {len(items)} texts (seed {args.seed}), {len(clean_texts)} clean, "
          f"mean {sum(len(i.text) for i in items) / len(items):.0f} chars")  # fmt: skip

    s1 = stage1_cost(clean_texts, args.repeat)
    chars = sum(map(len, clean_texts)) / len(clean_texts)
    print(f"\nstage 1 (regex) per clean text ({chars:.0f} chars on average, {len(s1)} calls): mean "
          f"{sum(s1) / len(s1):.4f} ms  p50 {pct(s1, 0.5):.4f} ms  p99 {pct(s1, 0.99):.4f} ms")  # fmt: skip

    ner = SpacyNer()
    t0 = time.perf_counter()
    ner.warm_up()
    print(f"stage 2 (spaCy {ner.model}, beam {ner.beam_width}) model load {time.perf_counter() - t0:.2f} s")
    single, lat, batched = stage2_speed(ner, [it.text for it in items])
    print(f"stage 2 throughput: {single:.0f} texts/s one at a time (p50 {pct(lat, 0.5):.1f} ms, p99 "
          f"{pct(lat, 0.99):.1f} ms), {batched:.0f} texts/s in batches of 32")  # fmt: skip

    classifier = classifier_from_env(os.environ)
    print(f"stage 3: {'LLM ' + classifier.endpoint if classifier else 'local rule (HIVEMEM_LLM_URL unset)'}")
    policy = PiiPolicy(escalation=args.policy)
    verdicts, latency = [], []
    for it in items:
        t0 = time.perf_counter()
        verdicts.append(scan(it.text, policy, ner, classifier))
        latency.append((time.perf_counter() - t0) * 1000)
    report(items, verdicts, latency)
    if classifier:
        classifier.close()


if __name__ == "__main__":
    main()
