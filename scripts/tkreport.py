"""A tkprobe report file as the document it holds (results/README.md, "The report"): version 3 is
version 2 written in columns, decoded here as tkprobe itself decodes it (src/report_columns.cpp);
versions 1 and 2 come back as they are. For the Python readers: plot.py, gate-selftest.sh,
compare_sdpa.py --against. And the other way, for the Python writers (compare_sdpa.py,
compare_based.py): a document compacted to version 2 and written as version 3, as tkprobe does."""
import copy
import json
import math

SCHEMAS = ("tkprobe.report/1", "tkprobe.report/2", "tkprobe.report/3")
STAT_FIELDS = ("median", "min", "max", "q1", "q3", "cv", "n")
DRIFT_FIELDS = ("drift_pct", "runs")


def _statistic(values, unit, better):
    if len(values) not in (len(STAT_FIELDS), len(STAT_FIELDS) + len(DRIFT_FIELDS)):
        raise ValueError(f"a statistic of {len(values)} values (valid: 7, or 9 with drift_pct and runs)")
    stats = dict(zip(STAT_FIELDS, values))
    stats.update(unit=unit, better=better)
    stats.update(zip(DRIFT_FIELDS, values[len(STAT_FIELDS):]))
    return stats


def _row(row, kinds, index):
    try:
        kind = kinds[row["probe"]][row["kind"]]
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"row {index}: no kind {row.get('kind')!r} in kinds[{row.get('probe')!r}]")
    out = {}
    for key, value in row.items():
        if key == "kind":
            continue
        if key in ("params", "metrics"):
            names = kind[key]
            if not isinstance(value, list) or len(value) != len(names):
                raise ValueError(f"row {index}: {key} does not match its kind's {len(names)} names")
            decoded = {}
            for name, v in zip(names, value):
                if isinstance(name, list):  # [name, unit, better]: a statistic as an array
                    decoded[name[0]] = _statistic(v, name[1], name[2])
                else:
                    decoded[name] = v
            value = decoded
        out[key] = value
    return out


def decoded(doc):
    """The version 1 or 2 document `doc` (parsed JSON) holds; raises ValueError where a version 3
    row does not match its kind."""
    if not isinstance(doc, dict) or doc.get("schema") != "tkprobe.report/3":
        return doc
    if not isinstance(doc.get("kinds"), dict) or not isinstance(doc.get("results"), list):
        raise ValueError("a version 3 report needs a 'kinds' object and a 'results' list")
    out = {}
    for key, value in doc.items():
        if key == "kinds":
            continue
        if key == "schema":
            value = "tkprobe.report/2"
        elif key == "results":
            value = [_row(r, doc["kinds"], i) for i, r in enumerate(value)]
        out[key] = value
    return out


def load(path):
    """The report at `path`, decoded; raises OSError, json.JSONDecodeError or ValueError."""
    with open(path) as f:
        return decoded(json.load(f))


# ---- writing: as tkprobe writes (src/report.cpp, src/report_columns.cpp) ----

SIGNIFICANT_DIGITS = 6
NVML_RANGES = ("sm_clock_mhz", "power_w", "temperature_c")


def round_significant(x):
    """As tkprobe writes version 2 numbers: non-integers to 6 significant digits (%.6g, as
    src/report.cpp's round_significant), anywhere in `x`; a new object."""
    if isinstance(x, dict):
        return {k: round_significant(v) for k, v in x.items()}
    if isinstance(x, list):
        return [round_significant(v) for v in x]
    if isinstance(x, float) and math.isfinite(x) and x != 0:
        return float(f"{x:.{SIGNIFICANT_DIGITS}g}")
    return x


def drop_repeated_check_texts(rows):
    """Version 2 writes a check's `what` only where it differs from the previous check of the same
    probe (readers put it back: restore_check_texts)."""
    last = {}
    for row in rows:
        what = row.get("check", {}).get("what")
        if what is None:
            continue
        if what == last.get(row["probe"]):
            del row["check"]["what"]
        else:
            last[row["probe"]] = what


def restore_check_texts(doc):
    """Puts back the `what` of every check a version 2 document left out (tkprobe's read_report does)."""
    last = {}
    for row in doc["results"]:
        check = row.get("check")
        if check is None:
            continue
        if "what" in check:
            last[row["probe"]] = check["what"]
        elif row["probe"] in last:
            check["what"] = last[row["probe"]]


def _fold_row_telemetry(row, summary):
    """A version 1 row's NVML readings into its probe's summary; the row keeps what is its own."""
    t = row["telemetry"]
    throttled = t.get("throttled", False)
    summary["rows"] = summary.get("rows", 0) + 1
    summary["throttled_rows"] = summary.get("throttled_rows", 0) + int(throttled)
    if "nvml" in t:
        summary["nvml"] = t["nvml"]
    kept = {}
    if "kernel_sm_clock_mhz" in t:
        kept["kernel_sm_clock_mhz"] = t["kernel_sm_clock_mhz"]
    if not t.get("samples_converged", True):
        kept["samples_converged"] = False
    if not t.get("clock_settled", True):
        kept["clock_settled"] = False
    for name in NVML_RANGES:
        if name in t:
            low, high = float(t[name][0]), float(t[name][1])
            old = summary.get(name)
            summary[name] = [low, high] if old is None else [min(old[0], low), max(old[1], high)]
    if throttled:  # the event and its reasons; the readings are in the summary's ranges
        kept["throttled"] = True
        kept["reasons"] = t["reasons"]
    row["telemetry"] = kept


def compacted(doc):
    """A version 1 or 2 document as version 2, as tkprobe's compact_report makes it: NVML's readings
    gathered once per probe as ranges (each row keeping its kernel clock and, where throttled, why),
    a check's `what` only where it changes, non-integers to 6 significant digits. Rows, params,
    metrics and checks are otherwise unchanged; `doc` is left as it was."""
    doc = copy.deepcopy(doc)
    if doc.get("schema") == SCHEMAS[0]:
        by_probe = {}
        for row in doc["results"]:
            if "telemetry" in row:
                _fold_row_telemetry(row, by_probe.setdefault(row["probe"], {}))
        doc = {"schema": SCHEMAS[1], **{s: doc.get(s) for s in ("tool", "host", "device")}, "telemetry": by_probe,
               "results": doc["results"], "findings": doc.get("findings")}
    else:
        restore_check_texts(doc)  # so the rule below applies afresh
    drop_repeated_check_texts(doc["results"])
    return round_significant(doc)


def _is_plain_stat(v):
    """Exactly a statistic's fields in their order, so an array and its kind's unit and better say all of it."""
    if not isinstance(v, dict):
        return False
    keys = tuple(v)
    head = (*STAT_FIELDS, "unit", "better")
    return keys == head or keys == head + DRIFT_FIELDS


def columns(doc):
    """The version 3 document of a version 2 one (src/report_columns.cpp's to_columns): per probe the
    distinct kinds of its rows, each row its kind's index and its params and metrics as arrays."""
    kinds, rows = {}, []
    for row in doc["results"]:
        signature = {"params": list(row["params"]),
                     "metrics": [[k, v["unit"], v["better"]] if _is_plain_stat(v) else k
                                 for k, v in row["metrics"].items()]}
        of_probe = kinds.setdefault(row["probe"], [])
        if signature not in of_probe:
            of_probe.append(signature)
        encoded = {}
        for key, value in row.items():
            if key == "params":
                value = list(value.values())
            elif key == "metrics":
                value = [[v[f] for f in (*STAT_FIELDS, *DRIFT_FIELDS) if f in v] if _is_plain_stat(v) else v
                         for v in value.values()]
            encoded[key] = value
            if key == "probe":
                encoded["kind"] = of_probe.index(signature)
        rows.append(encoded)
    out = {}
    for key, value in doc.items():
        if key == "schema":
            value = SCHEMAS[2]
        elif key == "results":
            out["kinds"] = kinds
            value = rows
        out[key] = value
    return out


def text(doc):
    """A report as tkprobe lays it out (src/report.cpp's report_text): a line a section, and a line
    a probe's kinds, a row and a finding. A version 2 document is written as version 3."""
    if doc.get("schema") == SCHEMAS[1]:
        doc = columns(doc)
    dump = lambda x: json.dumps(x, separators=(",", ":"))
    parts = []
    for key, value in doc.items():
        if key in ("results", "findings", "kinds") and value:
            if isinstance(value, list):
                parts.append(f"  {dump(key)}: [\n" + ",\n".join("    " + dump(v) for v in value) + "\n  ]")
            else:
                parts.append(f"  {dump(key)}: {{\n" + ",\n".join(f"    {dump(k)}: {dump(v)}" for k, v in value.items())
                             + "\n  }")
        else:
            parts.append(f"  {dump(key)}: {dump(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
