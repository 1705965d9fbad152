#!/usr/bin/env python3
"""A report cut to the rows another report measured: BASE's rows whose probe, params and device NEW
holds with status ok, written as tkprobe writes a report (scripts/tkreport.py). For two builds that
can run different rows, e.g. the PTX-only build (which skips the sm_90a rows) against the native one:
`tkprobe compare OUT NEW` then judges every row both measured, with BASE's bands, and reads NEW's
skipped rows as new.

    scripts/measured_rows.py BASE NEW OUT

Exit 2 on bad arguments or an unreadable report."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tkreport  # noqa: E402


def key(row):
    return row["probe"], json.dumps(row["params"], sort_keys=True), row.get("device")


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    base_path, new_path, out_path = argv[1:]
    try:
        base, new = tkreport.load(base_path), tkreport.load(new_path)
    except (OSError, ValueError, KeyError) as e:
        print(f"measured_rows.py: cannot read a report: {e}", file=sys.stderr)
        return 2
    measured = {key(r) for r in new["results"] if r["status"] == "ok"}
    kept = [r for r in base["results"] if key(r) in measured]
    print(f"{len(kept)} of {len(base['results'])} rows of {base_path} measured in {new_path}")
    base["results"] = kept
    with open(out_path, "w") as f:
        f.write(tkreport.text(base))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
