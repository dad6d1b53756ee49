"""Federated experience: projects that may not share trajectories learning from each other through checked artifacts.

    artifacts.py   what may leave a project: distilled skills, LoRA adapter weights, aggregate statistics (+ manifest)
    redact.py      the pure redactor every text artifact passes (private values and credentials -> placeholders)
    checks.py      the export gate: redaction, canaries, membership and attribute inference against the artifact
    aggregate.py   FedAvg for adapters, merge + dedup for skills, statistics merge
    rounds.py      one federation: participants train locally, export through the gate, aggregate, adapt; resumable

Imports environments and torch, never Django (lab/federation drives it from the console and the CLI).
"""
