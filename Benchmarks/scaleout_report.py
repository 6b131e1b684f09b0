"""scaleout.py's output: the ratio to N × one member against the target, the text tables (throughput, join
and scale-in costs) and the chart OUT/scaleout.svg."""
import json

from benchlib import INPUT_TOPIC
from scaleout_group import RETRY_TOPIC

TARGET = 0.9


def judge(rows, args):
    """Adds the ratio to N × one member and the target to every row; returns one member's results/s and
    where it came from."""
    one = next((r for r in rows if r["members"] == 1 and r.get("results_per_s")), None)
    if one:
        baseline, source = one["results_per_s"], "measured (N = 1)"
    else:
        baseline = args.max_concurrent * 1000 / args.delay_ms
        source = "nominal (maxConcurrent x 1000 / delayMs)"
    for r in rows:
        r["vs_ideal"] = round(r["results_per_s"] / (r["members"] * baseline), 3) if r.get("results_per_s") else None
        r["target_met"] = r["vs_ideal"] is not None and r["vs_ideal"] >= TARGET
    return baseline, source


def table(rows):
    head = (f"{'members':>7} | {'results/s':>9} | {'÷ (N × one)':>11} | {'input partitions/member':<23} | "
            f"{'retry partitions/member':<23} | {'settle s':>8} | target")
    lines = [head, "-" * len(head)]
    for r in rows:
        ratio = "-" if r.get("vs_ideal") is None else f"{r['vs_ideal']:.2f}"
        rate = "-" if r.get("results_per_s") is None else f"{r['results_per_s']:.0f}"
        settle = "-" if r.get("settle_s") is None else f"{r['settle_s']:.1f}"
        inputs = " ".join(str(x) for x in r.get("input_partitions", [])) or "-"
        retries = " ".join(str(x) for x in r.get("retry_partitions", [])) or "-"
        target = "ok" if r.get("target_met") else "MISSED"
        if r.get("problems"):
            target += " (" + "; ".join(r["problems"]) + ")"
        lines.append(f"{r['members']:>7} | {rate:>9} | {ratio:>11} | {inputs:<23} | {retries:<23} | {settle:>8} | {target}")
    return "\n".join(lines)


def short(name):
    """`pushes[3]` -> `in3`, `push-retries[3]` -> `re3`."""
    topic, _, rest = name.rpartition("[")
    return ("in" if topic == INPUT_TOPIC else "re" if topic == RETRY_TOPIC else topic) + rest.rstrip("]")


def seconds(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def costs_table(rows):
    """The join costs of every step, and the scale-in's, as text (empty when none was measured)."""
    lines = []
    joins = [(r["members"], j) for r in rows for j in r.get("joins", [])]
    if joins:
        lines.append("join costs (a member joins the settled group; inN/reN = pushes[N]/push-retries[N]; unowned s = "
                     "max from the old owner's revocation to the new one's assignment; s = from its assignment to its "
                     "first result):")
        head = (f"{'N':>3} | {'joins':>5} | {'moved in/re':>11} | {'unowned s':>9} | {'max s':>6} | {'re-runs':>7} | "
                f"per moved input partition: s")
        lines += [head, "-" * len(head)]
        for n, j in joins:
            per = " ".join(f"{short(m['partition'])}:{seconds(m['to_first_result_s'], 1)}" for m in j["moved"]
                           if m["partition"].startswith(INPUT_TOPIC + "[")) or "-"
            lines.append(f"{n:>3} | {'#' + str(j['member']):>5} | {str(j['input_moved']) + '/' + str(j['retry_moved']):>11} | "
                         f"{seconds(j['max_unowned_s'], 1):>9} | "
                         f"{seconds(j['max_to_first_result_s']):>6} | {j['reruns']:>7} | {per}")
        failures = ", ".join(f"N={r['members']}: {r['commit_failures_logged']}" for r in rows
                             if r.get("commit_failures_logged") is not None)
        if failures:
            lines.append(f"(log lines of failed offset commits, e.g. refused during a rebalance, per step: {failures})")
        steady = sum(r.get("steady_reruns", 0) for r in rows)
        if steady:
            lines.append(f"(and {steady} records ran twice before any join)")
    for r in rows:
        c = r.get("scale_in")
        if not c:
            continue
        if lines:
            lines.append("")
        lines.append(f"scale-in from N={r['members']}: SIGTERM to member #{c['leaving_member']} (held "
                     f"{c['leaving_held'][0]}/{c['leaving_held'][1]} input/retry partitions; load {c['load_at_sigterm']:.1f}); "
                     f"it exited after {seconds(c['exited_after_s'], 1)} s with status {c['exit_code']}; the survivors held "
                     f"every partition {seconds(c['survivors_hold_all_after_s'], 1)} s after the SIGTERM "
                     f"(last assignment logged at {seconds(c['last_assignment_after_s'], 1)} s)")
        head = (f"{'partition':<16} | {'from':>4} | {'to':>4} | {'released s after SIGTERM':>24} | "
                f"{'assigned s after SIGTERM':>24} | {'s to first result':>17}")
        lines += [head, "-" * len(head)]
        for m in c["moved"]:
            first = seconds(m["to_first_result_s"])
            if m["to_first_result_s"] is None and m["partition"].startswith(RETRY_TOPIC + "["):
                first = "- (no records)" if not c["retry_topic_records"] else "- (none read)"
            elif m["to_first_result_s"] is None:
                first = "NONE"
            lines.append(f"{m['partition']:<16} | {'#' + str(m['from']):>4} | {'#' + str(m['to']):>4} | "
                         f"{seconds(m['released_after_sigterm_s']):>24} | "
                         f"{seconds(m['assigned_after_sigterm_s']):>24} | {first:>17}")
        if not c["moved"]:
            lines.append("(no partition moved)")
        lines.append(f"max s from assignment to first result: {seconds(c['max_to_first_result_s'])}"
                     f"{' (' + str(c['input_moved_without_result']) + ' moved input partition(s) without a result)' if c['input_moved_without_result'] else ''}"
                     f"{'; TIMED OUT' if c['timed_out'] else ''}; records that ran twice: {c['reruns_moved']} of the "
                     f"moved partitions, {c['reruns']} in all"
                     + (f" ({', '.join(f'{short(k)}:{v}' for k, v in c['reruns_by_partition'].items())})"
                        if c["reruns_by_partition"] else ""))
    return "\n".join(lines)


def chart(out):
    """OUT/scaleout.svg from OUT/results.json: results/s per N against N × one member, and each member's
    input and retry partitions."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "pushworker-benchmark"
    import matplotlib.pyplot as plt

    data = json.loads((out / "results.json").read_text())
    rows, bench = data["steps"], data["benchmark"]
    baseline = data["one_member_results_per_s"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1.3]})
    ns = [r["members"] for r in rows]
    rates = [r.get("results_per_s") or 0 for r in rows]
    left.bar(ns, rates, color="#4878a8", width=0.6, label="measured")
    xs = [0.5, max(ns) + 0.5]
    left.plot(xs, [x * baseline for x in xs], "--", color="#444444", linewidth=1, label="N × one member")
    left.plot(xs, [x * baseline * TARGET for x in xs], ":", color="#c04040", linewidth=1,
              label=f"target {TARGET:g} × N × one")
    for n, rate, r in zip(ns, rates, rows):
        note = f"{rate:.0f}/s" + (f"\n{r['vs_ideal']:.2f}×" if r.get("vs_ideal") is not None else "")
        left.text(n, rate, note, ha="center", va="bottom", fontsize=8)
    left.set_xticks(ns)
    left.set_xlabel("members in the group")
    left.set_ylabel("results/s")
    left.set_ylim(0, max(rates + [max(ns) * baseline]) * 1.25)
    left.legend(fontsize=8, loc="upper left")
    left.set_title("results/s over the window", fontsize=10)

    labels, inputs, retries = [], [], []
    for r in rows:
        for m in r.get("member_rows", []):
            labels.append(f"N={r['members']}\n#{m['member']}")
            inputs.append(m["input_partitions"])
            retries.append(m["retry_partitions"])
    x = list(range(len(labels)))
    right.bar(x, inputs, color="#4878a8", width=0.6, label=f"{INPUT_TOPIC} (input)")
    right.bar(x, retries, bottom=inputs, color="#e0a040", width=0.6, label=f"{RETRY_TOPIC} (retry)")
    right.set_xticks(x)
    right.set_xticklabels(labels, fontsize=8)
    right.set_ylabel("partitions held")
    right.legend(fontsize=8)
    right.set_title("each member's partitions during the window", fontsize=10)
    env = data["environment"]
    version = f"{env.get('pushworker') or 'pushworker'}, {env.get('pushworker_path')}"
    fig.suptitle(f"Scale-out: {bench['partitions']} partitions per topic, {bench['rate']:g} records/s offered, "
                 f"noop {bench['delay_ms']} ms × {bench['max_concurrent']} per member\n{version}", fontsize=10)
    fig.tight_layout()
    path = out / "scaleout.svg"
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return path
