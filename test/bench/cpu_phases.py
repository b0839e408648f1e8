#!/usr/bin/env python3
"""test/bench/cpu_phases.py PERF_SCRIPT_OUTPUT: the share of a backend's CPU
samples by phase of a pg_inventory call, as a Markdown table.

Reads the text of `perf script` (samples with call chains, `perf record -g`).
Each sample is put in one phase: the phase of the innermost frame of its
stack that names one (PHASES below, by PostgreSQL function name), so WAL
written while inserting an index entry counts as WAL, and an index insert
inside a foreign-key check counts as the foreign-key check only if no
closer frame names a phase.  Samples in none of them are "other".
Used by test/bench/cpu_profile.sh.
"""
import collections
import sys

# function name -> phase; the innermost named frame of a sample wins
PHASES = {
    "XLogInsert": "WAL records (XLogInsert)",
    "ExecConstraints": "CHECK constraints (parsed again for each statement, then evaluated)",
    "RI_FKey_check_ins": "foreign-key checks (one query per referenced row)",
    "AfterTriggerEndQuery": "foreign-key checks (one query per referenced row)",
    "ExecInsertIndexTuples": "index entries of inserted rows",
    "ExecCheckIndexConstraints": "ON CONFLICT arbiter check (request key)",
    "heap_insert": "heap inserts",
    "heap_update": "heap update of the stock slot",
    "heap_lock_tuple": "row locks (FOR UPDATE of the slot, FOR KEY SHARE of foreign keys)",
    "index_getnext_slot": "index scans (reads)",
    "standard_ExecutorStart": "executor start (plan tree, relations, indexes, projections)",
    "standard_ExecutorEnd": "executor end",
    "GetCachedPlan": "plan cache (revalidate, lock the plan's relations)",
    "jsonb_build_object": "event payload (jsonb, to_char)",
    "timestamp_to_char": "event payload (jsonb, to_char)",
    "gen_random_uuid": "event id (gen_random_uuid)",
    "InventoryAuthorise": "tenant check (its statement)",
    "FinishCall": "outcome row",
    "CommitTransactionCommand": "commit (WAL writer wake-up, locks, clog)",
    "StartTransactionCommand": "transaction start",
}


def frames(path):
    stack = []
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if stack:
                    yield stack
                stack = []
                continue
            if line[0] in " \t":
                parts = line.strip().split(None, 1)
                if len(parts) == 2:
                    stack.append(parts[1].split("+")[0].split(" (")[0])
    if stack:
        yield stack


def main():
    counts = collections.Counter()
    total = 0
    for stack in frames(sys.argv[1]):  # innermost frame first
        total += 1
        counts[next((PHASES[f] for f in stack if f in PHASES), "other (the rest of statement execution, the call's C code, the loop)")] += 1
    if total == 0:
        print("(no samples: perf recorded nothing)")
        return
    print("| phase | share of samples |")
    print("|---|---|")
    for phase, n in counts.most_common():
        print(f"| {phase} | {100.0 * n / total:.1f}% |")
    print(f"\n{total} samples.")


if __name__ == "__main__":
    main()
