#!/usr/bin/env python3
"""validate_jsonl.py — checks leakgate results files line by line against
docs/results.schema.json (JSON Schema draft 2020-12), with Debian's python3-jsonschema.

    python3 validate_jsonl.py SCHEMA FILE...

A last line without its newline that is not JSON is a run cut short mid-write: it is
reported and skipped, as the loader does. Exit status 0 when every record is valid,
1 when one is not, 2 on usage or a missing jsonschema module.
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate_jsonl.py: python3-jsonschema is missing: apt-get install python3-jsonschema",
          file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    bad = 0
    for path in argv[2:]:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        complete = lines[:-1]  # the part after the last newline is "" for a complete file
        tail = lines[-1]
        records = 0
        for no, text in enumerate(complete, 1):
            if not text.strip():
                continue
            try:
                rec = json.loads(text)
            except ValueError as e:
                print(f"{path}:{no}: not JSON: {e}")
                bad += 1
                continue
            errors = sorted(validator.iter_errors(rec), key=lambda e: list(e.path))
            for e in errors[:5]:
                where = "/".join(str(p) for p in e.absolute_path) or "(record)"
                print(f"{path}:{no}: {where}: {e.message}")
            bad += bool(errors)
            records += 1
        if tail:
            try:
                json.loads(tail)
                print(f"{path}:{len(lines)}: last line has no newline but is complete")
            except ValueError:
                print(f"{path}:{len(lines)}: truncated last line skipped")
        print(f"{path}: {records} records checked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
