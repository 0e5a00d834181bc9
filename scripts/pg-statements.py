#!/usr/bin/env python3
"""The distinct SQL statements a PostgreSQL server log holds (pg-test-cluster.sh with
PG_TEST_STATEMENT_LOG=FILE): one per line, literals and whitespace normalized, sorted.

    pg-statements.py LOG              the statements
    pg-statements.py OLD NEW          the statements OLD has and NEW lacks (exit 1 if any)

What `make test` runs on PostgreSQL is compared this way when the suite is rearranged: every
statement the old layout made the server execute must still be executed (docs/TESTING.md)."""
import re
import sys

# log_line_prefix '%m [%p] app=%a ' (pg-test-cluster.sh): the statements of psql and pg_dump,
# which the interop tests run to inspect a registry, are not the product's and are left out.
ENTRY = re.compile(r"^\S+ \S+ \S+ \[\d+\] (?:app=(\S*) )?LOG:  (?:statement|execute [^:]*): (.*)$")
HARNESS = {"psql", "pg_dump"}


def statements(path):
    found, current = set(), None
    with open(path, errors="replace") as log:
        for line in log:
            line = line.rstrip("\n")
            if current is not None and line.startswith("\t"):
                current.append(line.strip())
                continue
            if current is not None:
                found.add(normalize(" ".join(current)))
                current = None
            match = ENTRY.match(line)
            if match and match.group(1) not in HARNESS:
                current = [match.group(2)]
    if current is not None:
        found.add(normalize(" ".join(current)))
    return found


def normalize(sql):
    sql = re.sub(r"'(?:[^']|'')*'", "'…'", sql)          # string literals
    sql = re.sub(r"\b\d+\b", "N", sql)                   # numbers (advisory lock ids, LIMITs)
    sql = re.sub(r"\b(?:reg|ws)_[0-9a-f]+\b", "SCHEMA", sql)  # per-test schemas
    sql = re.sub(r"\b([a-z]+)_[0-9a-f]{6,}\b", r"\1_HEX", sql)  # channels, temporary names
    return re.sub(r"\s+", " ", sql).strip().rstrip(";")


if __name__ == "__main__":
    if len(sys.argv) == 2:
        print("\n".join(sorted(statements(sys.argv[1]))))
    elif len(sys.argv) == 3:
        old, new = statements(sys.argv[1]), statements(sys.argv[2])
        missing = sorted(old - new)
        print(f"{len(old)} distinct statements before, {len(new)} after, {len(missing)} no longer executed")
        print("\n".join(missing))
        sys.exit(1 if missing else 0)
    else:
        sys.exit(__doc__)
