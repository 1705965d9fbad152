"""A tkprobe report file as the document it holds (results/README.md, "Versions"): version 3 is
version 2 written in columns, decoded here as tkprobe itself decodes it (src/report_columns.cpp);
versions 1 and 2 come back as they are. For the Python readers: plot.py, gate-selftest.sh,
compare_sdpa.py --against."""
import json

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
